# Tests of the T4aCuda package, for when a Julia toolchain is available
# (NOT YET RUN: none was where this was written; see ../README.md).
#
#   T4ACUDA_LIBRARY=/path/to/libt4acuda.so.0 julia --project=bindings/julia/T4aCuda \
#       -e 'using Pkg; Pkg.test()'
#
# 1. layouts: sizeof/fieldoffset/fieldnames of every generated struct against
#    abi/layouts.json (read with the small JSON reader below: stdlib only);
# 2. context-free calls and errors (status names, a forged handle);
# 3. without a driver: device_count/CudaRuntime throw NO_DRIVER naming the entry;
# 4. with a device: a saxpy compiled, launched and checked; a scalar of the
#    wrong size refused.

using Test
using T4aCuda
const L = T4aCuda.LibT4aCuda

const LAYOUTS = get(ENV, "T4ACUDA_LAYOUTS",
                    joinpath(@__DIR__, "..", "..", "..", "..", "abi", "layouts.json"))

# -- a minimal JSON reader (objects, arrays, strings, integers, true/false/null) --
function json_parse(s::String)
    pos = Ref(1)
    skip() = while pos[] <= ncodeunits(s) && s[pos[]] in (' ', '\n', '\r', '\t')
        pos[] += 1
    end
    function value()
        skip()
        c = s[pos[]]
        if c == '{'
            pos[] += 1
            d = Dict{String, Any}()
            skip()
            s[pos[]] == '}' && (pos[] += 1; return d)
            while true
                skip()
                k = value()::String
                skip()
                s[pos[]] == ':' || error("JSON: ':' expected at $(pos[])")
                pos[] += 1
                d[k] = value()
                skip()
                s[pos[]] == ',' ? (pos[] += 1) : (s[pos[]] == '}' ? (pos[] += 1; return d) :
                                                  error("JSON: ',' or '}' expected at $(pos[])"))
            end
        elseif c == '['
            pos[] += 1
            a = Any[]
            skip()
            s[pos[]] == ']' && (pos[] += 1; return a)
            while true
                push!(a, value())
                skip()
                s[pos[]] == ',' ? (pos[] += 1) : (s[pos[]] == ']' ? (pos[] += 1; return a) :
                                                  error("JSON: ',' or ']' expected at $(pos[])"))
            end
        elseif c == '"'
            io = IOBuffer()
            pos[] += 1
            while s[pos[]] != '"'
                if s[pos[]] == '\\'
                    pos[] += 1
                    e = s[pos[]]
                    if e == 'u'
                        print(io, Char(parse(UInt16, s[pos[]+1:pos[]+4]; base = 16)))
                        pos[] += 4
                    else
                        print(io, get(Dict('n' => '\n', 't' => '\t', 'r' => '\r',
                                           'b' => '\b', 'f' => '\f'), e, e))
                    end
                else
                    print(io, s[pos[]])
                end
                pos[] = nextind(s, pos[])
            end
            pos[] += 1
            return String(take!(io))
        elseif startswith(SubString(s, pos[]), "true")
            pos[] += 4; return true
        elseif startswith(SubString(s, pos[]), "false")
            pos[] += 5; return false
        elseif startswith(SubString(s, pos[]), "null")
            pos[] += 4; return nothing
        else
            m = match(r"-?[0-9]+", s, pos[])
            (m === nothing || m.offset != pos[]) && error("JSON: value expected at $(pos[])")
            pos[] += length(m.match)
            return parse(Int128, m.match)
        end
    end
    return value()
end

# The Julia struct generated for a C struct (the generator's naming rule).
function jl_struct(cname::String)
    startswith(cname, "t4a_") || return getfield(L, Symbol(cname))
    n = join(uppercasefirst.(split(cname[5:end], "_")))
    # a name Core/Base already has (Module) gets the prefix T4a
    return isdefined(L, Symbol("T4a" * n)) ? getfield(L, Symbol("T4a" * n)) :
           getfield(L, Symbol(n))
end

@testset "T4aCuda" begin
    @testset "layouts match abi/layouts.json" begin
        doc = json_parse(read(LAYOUTS, String))
        @test doc["schema"] == 1
        for s in doc["structs"]
            T = jl_struct(s["name"])
            @test isbitstype(T)
            @test sizeof(T) == s["size"]
            @test Base.datatype_alignment(T) == s["align"]
            names = [n for n in fieldnames(T) if !startswith(String(n), "_pad")]
            @test [rstrip(String(n), '_') for n in names] == [f["name"] for f in s["fields"]]
            for f in s["fields"]
                i = findfirst(n -> rstrip(String(n), '_') == f["name"], fieldnames(T))
                @test fieldoffset(T, i) == f["offset"]
                @test sizeof(fieldtype(T, i)) == f["size"]
            end
        end
        for fn in doc["functions"]
            @test isdefined(L, Symbol(fn["name"]))
        end
        for c in doc["constants"]
            c["kind"] == "string" || @test getfield(L, Symbol(c["name"])) == c["value"]
        end
    end

    @testset "context-free calls" begin
        @test T4aCuda.version()[1] == L.T4A_VERSION_MAJOR
        T4aCuda.check_version()
        @test T4aCuda.status_name(L.T4A_ERROR_INVALID_HANDLE) == "T4A_ERROR_INVALID_HANDLE"
        st = L.t4a_buffer_release(L.Buffer(0x0123456789abcdef))
        @test st == L.T4A_ERROR_INVALID_HANDLE
        e = T4aCuda.last_error(st)
        @test e.status == L.T4A_ERROR_INVALID_HANDLE
        @test e.entry == "t4a_buffer_release"
        @test !isempty(e.message)
        @test_throws T4aCudaError T4aCuda.check(st)
    end

    have_device = try
        device_count() > 0
    catch e
        e isa T4aCudaError || rethrow()
        @testset "no driver / no device" begin
            @test e.status in (L.T4A_ERROR_NO_DRIVER, L.T4A_ERROR_NO_DEVICE)
            @test e.entry == "t4a_device_count"
            err = try
                CudaRuntime()
                nothing
            catch e2
                e2
            end
            @test err isa T4aCudaError
            @test err.status in (L.T4A_ERROR_NO_DRIVER, L.T4A_ERROR_NO_DEVICE)
            @test err.entry == "t4a_runtime_create"
        end
        false
    end

    if have_device
        @testset "GPU saxpy" begin
            src = """
            extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
              int i = blockIdx.x * blockDim.x + threadIdx.x;
              if (i < n) y[i] = a * x[i] + y[i];
            }
            """
            CudaRuntime() do rt
                n = 1 << 20
                x = rand(Float32, n)
                y = rand(Float32, n)
                dx = DeviceArray(rt, x)
                dy = DeviceArray(rt, y)
                k = kernel(load_module(rt, compile(src; name = "saxpy.cu", rt = rt)), "saxpy")
                launch(k, cld(n, 256), 256, 2.0f0, dx, dy, Int32(n))
                @test download(dy) == 2.0f0 .* x .+ y
                # a Float64 for the float parameter: refused, nothing launched
                err = try
                    launch(k, cld(n, 256), 256, 2.0, dx, dy, Int32(n))
                    nothing
                catch e
                    e
                end
                @test err isa T4aCudaError && err.status == L.T4A_ERROR_INVALID_ARGUMENT
                @test err.entry == "t4a_launch"
                release!(dx)  # early release; the finalizer then does nothing
                @test_throws ArgumentError download(dx)
            end
        end
    else
        @info "T4aCuda: no CUDA device; the GPU saxpy test was not run"
    end
end
