"""
    T4aCuda

Julia bindings of the t4acuda C ABI. `T4aCuda.LibT4aCuda` (src/generated.jl,
generated from abi/layouts.json) holds one `ccall` wrapper per C function and
one isbits struct per C struct; this module adds error checking, ownership
through finalizers, uploads/downloads of `Vector`s, compilation and typed
launches.

NOT YET RUN UNDER JULIA: no Julia toolchain was available where this was
written; src/generated.jl is checked mechanically (see the package README).

Ownership rules:
- Buffers, artifacts, modules and kernels are released by a finalizer (or
  earlier by `release!`). A finalizer only calls `t4a_*_release`, which
  never waits and is safe from any thread.
- A runtime is never destroyed by a finalizer (destroying one can wait for
  its work): call `close(rt)` yourself, or use `CudaRuntime(f; ...)` which
  closes it when `f` returns. A runtime not closed stays alive until the
  process exits. Objects made through a runtime may outlive `close(rt)`;
  their finalizers still only release them.
"""
module T4aCuda

include("generated.jl")
using .LibT4aCuda
const L = LibT4aCuda

export T4aCudaError, CudaRuntime, DeviceArray, CompiledProgram, CudaModule, CudaKernel,
       upload!, download!, compile, load_module, kernel, launch, release!,
       synchronize, version, device_count

# ---- errors ----

"""
    T4aCudaError(status, name, driver_result, compiler_result, entry, message)

A failed t4acuda call: the `t4a_status` code and its name, the CUDA driver
result and NVRTC result (0 when none), the entry point and the library's
message (from `t4a_last_error` / `t4a_last_error_message`).
"""
struct T4aCudaError <: Exception
    status::Int32
    name::String
    driver_result::Int32
    compiler_result::Int32
    entry::String
    message::String
end

function Base.showerror(io::IO, e::T4aCudaError)
    print(io, "T4aCudaError: ", e.name, " (", e.status, ")")
    isempty(e.entry) || print(io, " in ", e.entry)
    isempty(e.message) || print(io, ": ", e.message)
    e.driver_result == 0 || print(io, " [driver result ", e.driver_result, "]")
    e.compiler_result == 0 || print(io, " [NVRTC result ", e.compiler_result, "]")
end

status_name(status::Integer) = unsafe_string(L.t4a_status_name(Int32(status)))

"""
    last_error(status) -> T4aCudaError

The calling thread's last error, as recorded by the failing call. Read it
right after the call (the check below does): the last error is per OS
thread, and a task does not change threads between two `ccall`s with no
yield between them.
"""
function last_error(status::Integer)
    info = Ref(L.ErrorInfo())
    L.t4a_last_error(info)
    needed = Ref{Csize_t}(0)
    L.t4a_last_error_message(Ptr{Cchar}(0), Csize_t(0), needed)
    buf = zeros(UInt8, max(Int(needed[]), 1))
    GC.@preserve buf L.t4a_last_error_message(Ptr{Cchar}(pointer(buf)), Csize_t(length(buf)),
                                              needed)
    message = String(buf[1:something(findfirst(==(0x00), buf), length(buf) + 1)-1])
    i = info[]
    entry = i.entry_point == C_NULL ? "" : unsafe_string(i.entry_point)
    T4aCudaError(Int32(status), status_name(status), i.driver_result, i.compiler_result,
                 entry, message)
end

"""Throws a T4aCudaError unless `status` is T4A_SUCCESS."""
@inline function check(status::Int32)
    status == L.T4A_SUCCESS || throw(last_error(status))
    return nothing
end

# ---- context-free queries ----

"""The library's version as (major, minor, patch)."""
function version()
    v = L.t4a_version()
    return (Int(v ÷ 10000), Int(v ÷ 100 % 100), Int(v % 100))  # major*10000 + minor*100 + patch
end
version_string() = unsafe_string(L.t4a_version_string())

"""Throws unless the loaded library's major version is the generated header's."""
function check_version()
    version()[1] == L.T4A_VERSION_MAJOR || throw(ErrorException(
        "libt4acuda $(version_string()) loaded from $(L.libt4acuda); these bindings were " *
        "generated for major version $(L.T4A_VERSION_MAJOR)"))
    return nothing
end

"""Number of CUDA devices; throws (NO_DRIVER without a driver)."""
function device_count()
    n = Ref{Int32}(0)
    check(L.t4a_device_count(n))
    return Int(n[])
end

# ---- runtime (explicit close; never closed by a finalizer) ----

mutable struct CudaRuntime
    handle::L.Runtime
end

"""
    CudaRuntime(; device = 0, options...)    -> CudaRuntime
    CudaRuntime(f; device = 0, options...)   -> f(rt), closing rt afterwards

A runtime on one device. `options` are fields of `t4a_runtime_options`
(zero means the library's default). It has no finalizer: `close(rt)`
destroys it (which may wait for its work); the `do`-block form closes it
when `f` returns or throws.
"""
function CudaRuntime(; device::Integer = 0, options...)
    opts = Ref(L.RuntimeOptions(; device_ordinal = Int32(device), options...))
    out = Ref(L.Runtime(0))
    check(L.t4a_runtime_create(opts, out))
    return CudaRuntime(out[])
end

function CudaRuntime(f::Function; kw...)
    rt = CudaRuntime(; kw...)
    try
        return f(rt)
    finally
        close(rt)
    end
end

isopen_handle(rt::CudaRuntime) = rt.handle.id != L.T4A_NULL_ID
Base.isopen(rt::CudaRuntime) = isopen_handle(rt)

function live(rt::CudaRuntime)
    isopen_handle(rt) || throw(ArgumentError("the CudaRuntime was closed"))
    return rt.handle
end

"""Destroys the runtime (waits for its work). A second close does nothing."""
function Base.close(rt::CudaRuntime)
    h = rt.handle
    h.id == L.T4A_NULL_ID && return nothing
    rt.handle = L.Runtime(0)
    check(L.t4a_runtime_destroy(h))
    return nothing
end

"""Waits on the host until the runtime's work is done."""
synchronize(rt::CudaRuntime) = check(L.t4a_runtime_synchronize(live(rt)))

# ---- release-only finalizers ----

# A finalizer must not throw, wait or destroy: it calls t4a_*_release once.
# The status is ignored on purpose: the handle is ours (release! clears it,
# so it is never released twice), and a finalizer has no caller to tell.
function finalize_release(x)
    h = x.handle
    h.id == L.T4A_NULL_ID && return nothing
    x.handle = typeof(h)(0)
    release_handle(h)
    return nothing
end
release_handle(h::L.Buffer) = L.t4a_buffer_release(h)
release_handle(h::L.Artifact) = L.t4a_artifact_release(h)
release_handle(h::L.T4aModule) = L.t4a_module_release(h)
release_handle(h::L.Kernel) = L.t4a_kernel_release(h)
release_handle(h::L.Download) = L.t4a_download_release(h)

"""Releases the object's reference now (its finalizer then does nothing)."""
function release!(x)
    h = x.handle
    h.id == L.T4A_NULL_ID && return nothing
    x.handle = typeof(h)(0)
    check(release_handle(h))
    return nothing
end

function owned(x)
    finalizer(finalize_release, x)
    return x
end

handle_of(x) = x.handle.id == L.T4A_NULL_ID ?
               throw(ArgumentError("$(typeof(x)) was released")) : x.handle

# ---- device arrays ----

"""
    DeviceArray{T}(rt, n)     n elements of isbits T (zero-filled)
    DeviceArray(rt, v)        a copy of the Vector v

Device memory of `n * sizeof(T)` bytes, released by its finalizer.
"""
mutable struct DeviceArray{T}
    handle::L.Buffer
    length::Int
    runtime::CudaRuntime
    function DeviceArray{T}(rt::CudaRuntime, n::Integer) where {T}
        isbitstype(T) || throw(ArgumentError("DeviceArray{$T}: $T is not an isbits type"))
        n >= 0 || throw(ArgumentError("DeviceArray{$T}: length $n is negative"))
        out = Ref(L.Buffer(0))
        bytes = Base.checked_mul(Int(n), sizeof(T))  # throws OverflowError, never wraps
        check(L.t4a_buffer_alloc(live(rt), UInt64(bytes), L.T4A_BUFFER_ZERO, out))
        return owned(new{T}(out[], Int(n), rt))
    end
end

function DeviceArray(rt::CudaRuntime, v::Vector{T}) where {T}
    a = DeviceArray{T}(rt, length(v))
    upload!(a, v)
    return a
end

Base.length(a::DeviceArray) = a.length
Base.eltype(::DeviceArray{T}) where {T} = T

"""Copies `src` into `a` starting at element `offset + 1` (0-based `offset`)."""
function upload!(a::DeviceArray{T}, src::Vector{T}; offset::Integer = 0) where {T}
    offset >= 0 && offset + length(src) <= length(a) || throw(ArgumentError(
        "upload!: $(length(src)) elements at offset $offset do not fit in $(length(a))"))
    # `a` too: a local whose last use is before the ccall may be finalized
    # (its handle released) while the call runs.
    GC.@preserve src a check(L.t4a_buffer_upload(live(a.runtime), handle_of(a),
                                                 UInt64(offset * sizeof(T)),
                                                 Ptr{Cvoid}(pointer(src)),
                                                 UInt64(length(src) * sizeof(T))))
    return a
end

"""Copies `a` (from 0-based element `offset`) into `dst`, waiting for it."""
function download!(dst::Vector{T}, a::DeviceArray{T}; offset::Integer = 0) where {T}
    offset >= 0 && offset + length(dst) <= length(a) || throw(ArgumentError(
        "download!: $(length(dst)) elements at offset $offset exceed the $(length(a))"))
    GC.@preserve dst a check(L.t4a_buffer_download_sync(live(a.runtime), handle_of(a),
                                                        UInt64(offset * sizeof(T)),
                                                        Ptr{Cvoid}(pointer(dst)),
                                                        UInt64(length(dst) * sizeof(T))))
    return dst
end

"""A new Vector with the array's contents (extends `Base.download`)."""
Base.download(a::DeviceArray{T}) where {T} = download!(Vector{T}(undef, length(a)), a)

# ---- compile, modules, kernels ----

mutable struct CompiledProgram
    handle::L.Artifact
end

"""
    compile(source; name = "kernel.cu", options = String[], rt = nothing,
            ptx = false, name_expressions = String[]) -> CompiledProgram

Compiles CUDA C++ with NVRTC (through the library's caches). With `rt`,
for that runtime's device. A compile error throws T4aCudaError (COMPILE)
whose message holds the log's start.
"""
function compile(source::AbstractString; name::AbstractString = "kernel.cu",
                 options::Vector{String} = String[], rt::Union{Nothing, CudaRuntime} = nothing,
                 ptx::Bool = false, name_expressions::Vector{String} = String[])
    src, pname = String(source), String(name)
    opts = [pointer(o) for o in options]
    exprs = [pointer(e) for e in name_expressions]
    out = Ref(L.Artifact(0))
    GC.@preserve src pname options name_expressions opts exprs begin
        req = Ref(L.CompileRequest(;
            output = ptx ? L.T4A_COMPILE_PTX : L.T4A_COMPILE_CUBIN,
            source = Ptr{Cchar}(pointer(src)), program_name = Ptr{Cchar}(pointer(pname)),
            options = isempty(opts) ? Ptr{Ptr{Cchar}}(0) : Ptr{Ptr{Cchar}}(pointer(opts)),
            option_count = UInt32(length(opts)),
            name_expressions = isempty(exprs) ? Ptr{Ptr{Cchar}}(0) :
                               Ptr{Ptr{Cchar}}(pointer(exprs)),
            name_expression_count = UInt32(length(exprs)),
            runtime = rt === nothing ? L.Runtime(0) : live(rt)))
        check(L.t4a_compile(req, out))
    end
    return owned(CompiledProgram(out[]))
end

mutable struct CudaModule
    handle::L.T4aModule
    runtime::CudaRuntime
end

"""Loads a compiled program into the runtime (module cache)."""
function load_module(rt::CudaRuntime, p::CompiledProgram)
    out = Ref(L.T4aModule(0))
    GC.@preserve p check(L.t4a_module_load(live(rt), handle_of(p), out))
    return owned(CudaModule(out[], rt))
end

mutable struct CudaKernel
    handle::L.Kernel
    runtime::CudaRuntime
end

"""The kernel `name` (an `extern "C"` or lowered name) of a module."""
function kernel(m::CudaModule, name::AbstractString)
    out = Ref(L.Kernel(0))
    GC.@preserve m check(L.t4a_kernel_get(handle_of(m), String(name), out))
    return owned(CudaKernel(out[], m.runtime))
end

# ---- launch ----

dims3(x::Integer) = (UInt32(x), UInt32(1), UInt32(1))
dims3(x::Tuple) = length(x) <= 3 ? ntuple(i -> i <= length(x) ? UInt32(x[i]) : UInt32(1), 3) :
                  throw(ArgumentError("launch: $(length(x)) dimensions (at most 3)"))

"""
    launch(k, grid, block, args...; shared_bytes = 0)

Enqueues `k` on its runtime's stream. `grid`/`block`: an integer or a
tuple of up to 3. Arguments: a `DeviceArray` passes its device buffer; an
isbits scalar passes its `sizeof(T)` bytes, which the library checks
against the kernel parameter's size (so a `Float64` for a `float`
parameter is refused: pass `Float32(x)`, `Int32(n)`).
"""
function launch(k::CudaKernel, grid, block, args...; shared_bytes::Integer = 0)
    scalars = Any[]
    cargs = Vector{L.Arg}(undef, length(args))
    for (i, a) in enumerate(args)
        if a isa DeviceArray
            cargs[i] = L.Arg(; kind = L.T4A_ARG_BUFFER, buffer = handle_of(a))
        elseif isbits(a)
            r = Ref(a)
            push!(scalars, r)
            cargs[i] = L.Arg(; kind = L.T4A_ARG_SCALAR, size = UInt64(sizeof(a)),
                             value = Ptr{Cvoid}(Base.unsafe_convert(Ptr{typeof(a)}, r)))
        else
            throw(ArgumentError("launch: argument $i is a $(typeof(a)); pass a DeviceArray " *
                                "or an isbits scalar"))
        end
    end
    GC.@preserve k scalars cargs args begin
        desc = Ref(L.LaunchDesc(; kernel = handle_of(k), grid = dims3(grid),
                                block = dims3(block), dynamic_shared_bytes = UInt32(shared_bytes),
                                arg_count = UInt32(length(cargs)),
                                args = isempty(cargs) ? Ptr{L.Arg}(0) : pointer(cargs)))
        check(L.t4a_launch(live(k.runtime), desc))
    end
    return nothing
end

end # module T4aCuda
