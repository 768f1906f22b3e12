/*
 * t4acuda-info: prints the library, driver and NVRTC versions, every
 * device's facts and the peer-access matrix. Without a CUDA driver it says
 * so, with the loader's reason, and exits 0.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t4acuda.h"

static char *last_message(void) {
  size_t needed = 0;
  t4a_last_error_message(NULL, 0, &needed);
  char *buf = malloc(needed);
  if (buf != NULL) t4a_last_error_message(buf, needed, &needed);
  return buf;
}

static int fail(const char *what, t4a_status s) {
  char *m = last_message();
  fprintf(stderr, "t4acuda-info: %s failed: %s: %s\n", what, t4a_status_name(s),
          m != NULL ? m : "");
  free(m);
  return 1;
}

/* The toolkit include directories a compile gets without options. */
static void print_toolkit_headers(void) {
  size_t needed = 0;
  t4a_status s = t4a_toolkit_headers(NULL, 0, &needed);
  char *text = s == T4A_SUCCESS ? malloc(needed) : NULL;
  if (text == NULL || t4a_toolkit_headers(text, needed, NULL) != T4A_SUCCESS) {
    char *m = last_message();
    printf("CUDA toolkit headers: not usable (%s): %s\n", t4a_status_name(s),
           m != NULL ? m : "");
    free(m);
    free(text);
    return;
  }
  int found = 0;
  for (char *line = strtok(text, "\n"); line != NULL;
       line = strtok(NULL, "\n")) {
    if (strncmp(line, "include ", 8) == 0) {
      printf("CUDA toolkit include directory: %s\n", line + 8);
      found = 1;
    } else if (strncmp(line, "version ", 8) == 0) {
      printf("CUDA toolkit headers: CUDA %s", line + 8);
    } else if (strncmp(line, "from ", 5) == 0) {
      printf(" (found through %s)\n", line + 5);
    } else if (strncmp(line, "passed-over ", 12) == 0) {
      printf("CUDA toolkit directories passed over: %s\n", line + 12);
    }
  }
  if (!found)
    printf("CUDA toolkit headers: none found (set T4A_CUDA_INCLUDE); "
           "compiles get no cuda_fp16.h or cooperative_groups.h\n");
  free(text);
}

int main(void) {
  printf("t4acuda %s (built against CUDA %d.%d)\n", t4a_version_string(),
         t4a_built_cuda_version() / 1000,
         (t4a_built_cuda_version() % 1000) / 10);

  int32_t nv_major = 0, nv_minor = 0;
  t4a_status s = t4a_nvrtc_version(&nv_major, &nv_minor);
  if (s == T4A_SUCCESS) {
    printf("NVRTC %d.%d\n", nv_major, nv_minor);
    print_toolkit_headers();
  } else {
    char *m = last_message();
    printf("NVRTC: not available (%s): %s\n", t4a_status_name(s),
           m != NULL ? m : "");
    free(m);
  }

  int32_t driver = 0;
  s = t4a_driver_version(&driver);
  if (s == T4A_ERROR_NO_DRIVER) {
    char *m = last_message();
    printf("No CUDA driver was found, so there are no devices to show.\n"
           "Reason: %s\n",
           m != NULL ? m : "");
    free(m);
    return 0;
  }
  if (s != T4A_SUCCESS) return fail("t4a_driver_version", s);
  printf("CUDA driver %d.%d\n", driver / 1000, (driver % 1000) / 10);
  size_t lacks_bytes = 0;
  s = t4a_driver_lacks(NULL, 0, &lacks_bytes);
  if (s != T4A_SUCCESS) return fail("t4a_driver_lacks", s);
  char *lacks = malloc(lacks_bytes);
  if (lacks == NULL) {
    fprintf(stderr, "t4acuda-info: out of memory\n");
    return 1;
  }
  s = t4a_driver_lacks(lacks, lacks_bytes, NULL);
  if (s != T4A_SUCCESS) {
    free(lacks);
    return fail("t4a_driver_lacks", s);
  }
  if (lacks[0] == '\0') {
    printf("The driver has every entry point t4acuda uses.\n");
  } else {
    printf("The driver lacks (a newer driver enables these):\n");
    for (char *line = strtok(lacks, "\n"); line != NULL;
         line = strtok(NULL, "\n"))
      printf("  %s\n", line);
  }
  free(lacks);

  int32_t count = 0;
  s = t4a_device_count(&count);
  if (s != T4A_SUCCESS) return fail("t4a_device_count", s);
  printf("%d device(s)\n", count);
  for (int32_t d = 0; d < count; ++d) {
    t4a_device_info info = T4A_DEVICE_INFO_INIT;
    s = t4a_device_info_get(d, &info);
    if (s != T4A_SUCCESS) return fail("t4a_device_info_get", s);
    printf("\ndevice %d: %s\n", d, info.name);
    printf("  uuid                 GPU-");
    for (int i = 0; i < 16; ++i) {
      printf("%02x", info.uuid[i]);
      if (i == 3 || i == 5 || i == 7 || i == 9) printf("-");
    }
    printf("\n");
    printf("  compute capability   %d.%d\n", info.cc_major, info.cc_minor);
    printf("  multiprocessors      %d\n", info.multiprocessor_count);
    printf("  memory               %.1f GiB\n",
           (double)info.total_memory_bytes / (1024.0 * 1024.0 * 1024.0));
    printf("  clock                %d MHz\n", info.clock_rate_khz / 1000);
    printf("  PCI                  %04x:%02x:%02x\n", info.pci_domain_id,
           info.pci_bus_id, info.pci_device_id);
    printf("  threads per block    %d (block %d x %d x %d)\n",
           info.max_threads_per_block, info.max_block_dim[0],
           info.max_block_dim[1], info.max_block_dim[2]);
    printf("  grid                 %d x %d x %d\n", info.max_grid_dim[0],
           info.max_grid_dim[1], info.max_grid_dim[2]);
    printf("  shared per block     %d bytes (opt-in %d)\n",
           info.max_shared_per_block, info.max_shared_per_block_optin);
    printf("  registers per block  %d\n", info.max_registers_per_block);
    printf("  memory pools         %s\n",
           info.memory_pools_supported ? "yes" : "no");
    printf("  cooperative launch   %s\n",
           info.cooperative_launch ? "yes" : "no");
  }
  if (count > 0) {
    printf("\npeer access (row can access column):\n     ");
    for (int32_t p = 0; p < count; ++p) printf(" %3d", p);
    printf("\n");
    for (int32_t d = 0; d < count; ++d) {
      printf("  %3d", d);
      for (int32_t p = 0; p < count; ++p) {
        int32_t can = 0;
        if (d == p) {
          printf("   -");
          continue;
        }
        s = t4a_device_can_access_peer(d, p, &can);
        if (s != T4A_SUCCESS) return fail("t4a_device_can_access_peer", s);
        printf(" %3s", can ? "yes" : "no");
      }
      printf("\n");
    }
  }
  return 0;
}
