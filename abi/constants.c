/* Prints the numeric constants of t4acuda.h that callers compile into their
 * programs but that the ABI corpus cannot see (t4a_status is an int32_t, so
 * the status enum is not reachable from any exported function). abi/check
 * compares this list with abi/constants.txt: a value may be added, never
 * changed, removed or reused. */
#include <stdio.h>

#include "t4acuda.h"

int main(void) {
#define T4A_PRINT_STATUS_(name, value, text)                                   \
  printf("status %s %d\n", #name, (int)(name));
  T4A_STATUS_MAP(T4A_PRINT_STATUS_)
#undef T4A_PRINT_STATUS_
  printf("log_level T4A_LOG_OFF %d\n", (int)T4A_LOG_OFF);
  printf("log_level T4A_LOG_ERROR %d\n", (int)T4A_LOG_ERROR);
  printf("log_level T4A_LOG_WARN %d\n", (int)T4A_LOG_WARN);
  printf("log_level T4A_LOG_INFO %d\n", (int)T4A_LOG_INFO);
  printf("log_level T4A_LOG_DEBUG %d\n", (int)T4A_LOG_DEBUG);
  printf("constant T4A_NULL_ID %llu\n", (unsigned long long)T4A_NULL_ID);
  printf("constant T4A_DEVICE_NAME_CAPACITY %d\n",
         (int)T4A_DEVICE_NAME_CAPACITY);
  printf("constant T4A_POOL_KEEP_ALL %llu\n",
         (unsigned long long)T4A_POOL_KEEP_ALL);
  printf("constant T4A_BUFFER_ZERO %u\n", (unsigned)T4A_BUFFER_ZERO);
  printf("constant T4A_DEFAULT_STAGING_BYTES %llu\n",
         (unsigned long long)T4A_DEFAULT_STAGING_BYTES);
  printf("constant T4A_DEFAULT_STAGING_CHUNK_BYTES %llu\n",
         (unsigned long long)T4A_DEFAULT_STAGING_CHUNK_BYTES);
  printf("constant T4A_STAGING_THREADS_AUTO %d\n",
         (int)T4A_STAGING_THREADS_AUTO);
  printf("constant T4A_COMPILE_CUBIN %u\n", (unsigned)T4A_COMPILE_CUBIN);
  printf("constant T4A_COMPILE_PTX %u\n", (unsigned)T4A_COMPILE_PTX);
  printf("constant T4A_COMPILE_NO_MEMORY_CACHE %u\n",
         (unsigned)T4A_COMPILE_NO_MEMORY_CACHE);
  printf("constant T4A_COMPILE_NO_DISK_CACHE %u\n",
         (unsigned)T4A_COMPILE_NO_DISK_CACHE);
  printf("constant T4A_DEFAULT_DISK_CACHE_BYTES %llu\n",
         (unsigned long long)T4A_DEFAULT_DISK_CACHE_BYTES);
  printf("constant T4A_MEMORY_CACHE_ENTRIES %d\n",
         (int)T4A_MEMORY_CACHE_ENTRIES);
  printf("constant T4A_MEMORY_CACHE_BYTES %llu\n",
         (unsigned long long)T4A_MEMORY_CACHE_BYTES);
  printf("constant T4A_ARTIFACT_KEY_CAPACITY %d\n",
         (int)T4A_ARTIFACT_KEY_CAPACITY);
  return 0;
}
