/**
 * @file t4acuda_dlpack.h
 * @brief DLPack 1.x interchange for t4acuda buffers: export a buffer as a
 *        `DLManagedTensorVersioned` (or a legacy `DLManagedTensor`), import
 *        a CUDA tensor of the runtime's device as a buffer.
 *
 * The DLPack structures below are written from the published DLPack ABI
 * (major version 1). When `dlpack.h` was included before this header (its
 * guard `DLPACK_DLPACK_H_` is defined), its definitions are used and ours
 * are skipped; including `dlpack.h` after this header is then a no-op,
 * since this header defines that guard too.
 *
 * Streams. Export takes the consumer's stream in the Python DLPack coding:
 * -1 no synchronization (the consumer orders its work itself), 0 refused
 * (ambiguous), 1 the legacy default stream, 2 the per-thread default
 * stream, any other value a `CUstream` of the runtime's context. The
 * consumer stream waits on an event recorded on the runtime's stream: no
 * host wait. Import expects the producer's work already ordered before the
 * runtime's stream (e.g. the producer was given the runtime's stream, from
 * t4a_raw_begin(), and the raw scope ended before the import).
 *
 * C11 and C++; see docs/dlpack.md for the rules and their tests.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */
#ifndef T4ACUDA_DLPACK_H
#define T4ACUDA_DLPACK_H

#include <stddef.h>
#include <stdint.h>

#include "t4acuda.h"

#ifndef DLPACK_DLPACK_H_
/** dlpack.h's include guard: defined here too, so that a later
 *  `#include <dlpack/dlpack.h>` does not redefine the structures. */
#define DLPACK_DLPACK_H_

#ifdef __cplusplus
extern "C" {
#endif

/** DLPack major version these definitions follow. */
#define DLPACK_MAJOR_VERSION 1
/** DLPack minor version these definitions follow. */
#define DLPACK_MINOR_VERSION 0

/** Tensor flag: the consumer must not write through the tensor. */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
/** Tensor flag: the producer made a copy for this tensor, which the
 *  consumer owns alone. */
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

/** @brief A DLPack ABI version (major, minor). */
typedef struct DLPackVersion {
  uint32_t major; /**< incompatible changes bump it. */
  uint32_t minor; /**< compatible additions bump it. */
} DLPackVersion;

/** @brief Where a tensor's memory lives (the values are the DLPack ABI;
 *  int-sized in C and C++ alike). */
typedef enum DLDeviceType {
  kDLCPU = 1,          /**< host memory. */
  kDLCUDA = 2,         /**< CUDA device memory. */
  kDLCUDAHost = 3,     /**< pinned host memory (cuMemHostAlloc). */
  kDLOpenCL = 4,       /**< OpenCL. */
  kDLVulkan = 7,       /**< Vulkan. */
  kDLMetal = 8,        /**< Metal. */
  kDLVPI = 9,          /**< Verilator. */
  kDLROCM = 10,        /**< ROCm device memory. */
  kDLROCMHost = 11,    /**< ROCm pinned host memory. */
  kDLExtDev = 12,      /**< reserved for extensions. */
  kDLCUDAManaged = 13, /**< CUDA managed (unified) memory. */
  kDLOneAPI = 14,      /**< oneAPI unified shared memory. */
  kDLWebGPU = 15,      /**< WebGPU. */
  kDLHexagon = 16,     /**< Hexagon DSP. */
  kDLMAIA = 17         /**< Microsoft MAIA. */
} DLDeviceType;

/** @brief A device: its type and ordinal. */
typedef struct DLDevice {
  DLDeviceType device_type; /**< a ::DLDeviceType. */
  int32_t device_id;        /**< the ordinal (CUDA: the device ordinal). */
} DLDevice;

/** @brief Element type codes (`DLDataType::code`). */
typedef enum DLDataTypeCode {
  kDLInt = 0U,          /**< signed integer. */
  kDLUInt = 1U,         /**< unsigned integer. */
  kDLFloat = 2U,        /**< IEEE floating point. */
  kDLOpaqueHandle = 3U, /**< opaque handle. */
  kDLBfloat = 4U,       /**< bfloat16. */
  kDLComplex = 5U,      /**< complex (two floats). */
  kDLBool = 6U          /**< boolean. */
} DLDataTypeCode;

/** @brief An element type: code, bits per lane, lanes. */
typedef struct DLDataType {
  uint8_t code;   /**< a ::DLDataTypeCode. */
  uint8_t bits;   /**< bits of one lane (8, 16, 32, 64, ...). */
  uint16_t lanes; /**< lanes (1 for scalars). */
} DLDataType;

/** @brief A tensor view: no ownership. */
typedef struct DLTensor {
  /** base pointer of the allocation; the first element is at
   *  `(char *)data + byte_offset`. */
  void *data;
  DLDevice device;  /**< where `data` lives. */
  int32_t ndim;     /**< number of dimensions. */
  DLDataType dtype; /**< element type. */
  int64_t *shape;   /**< `ndim` extents. */
  /** `ndim` strides in elements, or NULL for compact row-major. */
  int64_t *strides;
  uint64_t byte_offset; /**< offset of the first element from `data`. */
} DLTensor;

/** @brief A legacy (pre-1.0, unversioned) managed tensor. */
typedef struct DLManagedTensor {
  DLTensor dl_tensor; /**< the view. */
  void *manager_ctx;  /**< the producer's context. */
  /** Called once by the consumer when it is done (may be NULL). */
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/** @brief A versioned managed tensor (DLPack 1.x). */
typedef struct DLManagedTensorVersioned {
  DLPackVersion version; /**< the producer's DLPack version. */
  void *manager_ctx;     /**< the producer's context. */
  /** Called once by the consumer when it is done (may be NULL). */
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;     /**< DLPACK_FLAG_BITMASK_* bits. */
  DLTensor dl_tensor; /**< the view. */
} DLManagedTensorVersioned;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DLPACK_DLPACK_H_ */

#ifdef __cplusplus
extern "C" {
#endif

/** ::t4a_dlpack_desc flag: export read-only (sets
 *  #DLPACK_FLAG_BITMASK_READ_ONLY on the tensor). */
#define T4A_DLPACK_READ_ONLY 0x1u

/** Consumer-stream code: no synchronization (the consumer orders itself). */
#define T4A_DLPACK_STREAM_NONE (-1)
/** Consumer-stream code: the legacy default stream. */
#define T4A_DLPACK_STREAM_LEGACY 1
/** Consumer-stream code: the per-thread default stream. */
#define T4A_DLPACK_STREAM_PER_THREAD 2

/**
 * @brief How a buffer is viewed as a tensor on export.
 *
 * A zero-filled struct with only `struct_size` set (#T4A_DLPACK_DESC_INIT)
 * describes a 1-D tensor of `uint8` over the whole buffer. The tensor's
 * elements must lie inside the buffer: the byte span reached from
 * `byte_offset` by the shape and strides (negative strides reach below the
 * first element) must fit in `[0, buffer size)`; a rejection names the
 * field and its values.
 */
typedef struct t4a_dlpack_desc {
  uint32_t struct_size; /**< in: sizeof(t4a_dlpack_desc) of the caller. */
  uint32_t flags;       /**< #T4A_DLPACK_READ_ONLY or 0. */
  /** a ::DLDataTypeCode; with `dtype_bits` 0, 0 means `uint8` bytes. */
  uint8_t dtype_code;
  uint8_t dtype_bits;   /**< bits per lane; 0 means 8. */
  uint16_t dtype_lanes; /**< lanes; 0 means 1. */
  /** dimensions, 0..32; 0 means 1-D over the whole buffer from
   *  `byte_offset` (`shape` and `strides` ignored). */
  int32_t ndim;
  const int64_t *shape; /**< `ndim` non-negative extents. */
  /** `ndim` strides in elements, or NULL for C-contiguous. */
  const int64_t *strides;
  uint64_t byte_offset; /**< offset of the first element in the buffer. */
} t4a_dlpack_desc;

/** Initializer for ::t4a_dlpack_desc (1-D uint8 over the whole buffer). */
#define T4A_DLPACK_DESC_INIT                                                   \
  { sizeof(t4a_dlpack_desc), 0, 0, 0, 0, 0, NULL, NULL, 0 }

/** Most dimensions an exported or imported tensor may have. */
#define T4A_DLPACK_MAX_NDIM 32

/**
 * @brief Exports a buffer as a DLPack 1.x tensor.
 *
 * The tensor's `manager_ctx` holds a reference to the buffer, so releasing
 * the handle afterwards is fine. Its deleter may be called on any thread,
 * exactly once; it never waits and takes no library lock: it makes the
 * runtime's stream wait for the consumer stream's work enqueued before it
 * (an event recorded on the consumer stream; for codes 1 and 2 on the
 * legacy default stream of the runtime's context, which orders after every
 * blocking stream's work) and then drops the reference, so the buffer's
 * stream-ordered free comes after that work. With code -1 the consumer
 * promises its own ordering and the deleter only drops the reference. An
 * explicit consumer stream must still exist when the deleter runs.
 *
 * @param[in]  runtime         the buffer's runtime.
 * @param[in]  buffer          the buffer (of `runtime`).
 * @param[in]  desc            the view; NULL: 1-D uint8 over the buffer.
 * @param[in]  consumer_stream -1, 1, 2 or a `CUstream` of the runtime's
 *                             context (0 is refused).
 * @param[out] out             the new tensor (version 1.0, device
 *                             kDLCUDA / the runtime's ordinal, flags
 *                             #DLPACK_FLAG_BITMASK_READ_ONLY with
 *                             #T4A_DLPACK_READ_ONLY or for a read-only
 *                             import).
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_ARGUMENT (naming the field and
 *         its values, or the stream); #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_WRONG_RUNTIME; #T4A_ERROR_OUT_OF_HOST_MEMORY; a
 *         driver failure of the event record or wait.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_to_dlpack(t4a_runtime runtime, t4a_buffer buffer,
                                        const t4a_dlpack_desc *desc,
                                        int64_t consumer_stream,
                                        DLManagedTensorVersioned **out);

/**
 * @brief t4a_buffer_to_dlpack() producing a legacy `DLManagedTensor`
 *        (no version, no flags: read-only is not expressible, so
 *        #T4A_DLPACK_READ_ONLY and read-only buffers are refused).
 * @param[in]  runtime         the buffer's runtime.
 * @param[in]  buffer          the buffer (of `runtime`, not read-only).
 * @param[in]  desc            the view; NULL: 1-D uint8 over the buffer.
 * @param[in]  consumer_stream as for t4a_buffer_to_dlpack().
 * @param[out] out             the new legacy tensor.
 * @return as t4a_buffer_to_dlpack().
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_to_dlpack_legacy(t4a_runtime runtime,
                                               t4a_buffer buffer,
                                               const t4a_dlpack_desc *desc,
                                               int64_t consumer_stream,
                                               DLManagedTensor **out);

/**
 * @brief Imports a CUDA tensor of the runtime's device as a buffer.
 *
 * Takes ownership of `tensor` in every case: its deleter (when not NULL)
 * is called exactly once, on a thread that holds no library lock, also
 * when the import fails (a major version other than 1, a device type other
 * than kDLCUDA, a device other than the runtime's, NULL data, a bad shape
 * or strides, ...). After a successful import it is called once the
 * buffer's last reference is gone AND the runtime's work enqueued until
 * then is proven complete: by a non-blocking event query at a later
 * t4a_buffer_from_dlpack / t4a_buffer_to_dlpack call of that runtime, by
 * t4a_runtime_synchronize(), or at the runtime's teardown. Never earlier;
 * if completion can never be proven (a broken runtime), the deleter is not
 * called and the memory is leaked (logged), like the library's own.
 *
 * The buffer is the byte range the tensor reaches: from the lowest to the
 * highest element (strides in elements, any sign, computed from the shape;
 * NULL strides: compact row-major), starting at `data + byte_offset` plus
 * the lowest element's offset. An empty tensor (an extent 0) imports as an
 * empty buffer. The producer's work must already be ordered before the
 * runtime's stream.
 *
 * Tensors with #DLPACK_FLAG_BITMASK_READ_ONLY import as read-only buffers:
 * t4a_buffer_fill(), t4a_buffer_copy() into them, t4a_buffer_upload() and
 * t4a_buffer_upload_host() return #T4A_ERROR_INVALID_ARGUMENT naming the
 * read-only import; reading them (downloads, copies from them, export) is
 * fine. A kernel launch taking one as an argument is allowed: the library
 * cannot know whether the kernel writes.
 *
 * @param[in]  runtime the runtime; the tensor must be on its device.
 * @param[in]  tensor  the tensor (ownership taken; NULL is refused).
 * @param[out] out     the new buffer handle.
 * @return #T4A_SUCCESS; #T4A_ERROR_INVALID_ARGUMENT naming the field and
 *         its value; #T4A_ERROR_INVALID_HANDLE;
 *         #T4A_ERROR_OUT_OF_HOST_MEMORY.
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_from_dlpack(t4a_runtime runtime,
                                          DLManagedTensorVersioned *tensor,
                                          t4a_buffer *out);

/**
 * @brief t4a_buffer_from_dlpack() for a legacy `DLManagedTensor`: always
 *        imported read-only (a legacy tensor has no flags to say it may be
 *        written).
 * @param[in]  runtime the runtime; the tensor must be on its device.
 * @param[in]  tensor  the tensor (ownership taken; NULL is refused).
 * @param[out] out     the new (read-only) buffer handle.
 * @return as t4a_buffer_from_dlpack().
 * @since 0.1.0
 */
T4A_API t4a_status t4a_buffer_from_dlpack_legacy(t4a_runtime runtime,
                                                 DLManagedTensor *tensor,
                                                 t4a_buffer *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* T4ACUDA_DLPACK_H */
