// Test-only entry points (T4A_TESTING builds): fault injection and registry
// test objects. Declared in src/testing/t4acuda_testing.h.
#if defined(T4A_TESTING)

#include "capi/entry.hpp"
#include "capi/handles.hpp"
#include "core/admission.hpp"
#include "driver/fault_injection.hpp"
#include "testing/t4acuda_testing.h"

using namespace t4a;
using capi::not_null;

namespace {
struct TestObject final : core::Object {
  static constexpr uint64_t k_magic = 0x7434615445535431ull;
  explicit TestObject(uint64_t v) : Object(core::Kind::TestObject), value(v) {}
  ~TestObject() override { magic = 0; }
  uint64_t magic = k_magic;
  uint64_t value;
};
} // namespace

extern "C" {

T4A_API t4a_status t4a_testing_fault_arm(const char *entry, uint64_t nth,
                                         int32_t cu_result, int32_t mode) {
  return T4A_ENTRY({
    return capi::call(not_null(entry, "entry"), [&]() -> t4a_status {
      if (!driver::fault::arm(entry, nth, cu_result,
                              static_cast<driver::fault::Mode>(mode)))
        return core::fail(T4A_ERROR_INVALID_ARGUMENT,
                          "cannot arm '%s' (nth %llu, mode %d): unknown entry "
                          "point, nth 0 or bad mode",
                          entry, static_cast<unsigned long long>(nth), mode);
      return T4A_SUCCESS;
    });
  });
}

T4A_API void t4a_testing_fault_reset(void) { driver::fault::reset(); }

T4A_API void t4a_testing_admission_hook(void (*hook)(void *arg), void *arg) {
  core::g_admission_hook_arg.store(arg, std::memory_order_release);
  core::g_admission_hook.store(hook, std::memory_order_release);
}

T4A_API void t4a_testing_count_calls(int32_t on) {
  driver::fault::set_counting(on != 0);
}

T4A_API int64_t t4a_testing_call_count(const char *entry) {
  return entry != nullptr ? driver::fault::call_count(entry) : -1;
}

T4A_API t4a_status t4a_testing_object_create(uint64_t value, uint64_t *id) {
  return T4A_ENTRY({
    return capi::call(not_null(id, "id"), [&]() -> t4a_status {
      *id =
          core::Registry::instance().insert(core::make_ref<TestObject>(value));
      return T4A_SUCCESS;
    });
  });
}

T4A_API t4a_status t4a_testing_object_retain(uint64_t id) {
  return T4A_ENTRY(
      { return capi::retain_handle(id, core::Kind::TestObject, "object"); });
}

T4A_API t4a_status t4a_testing_object_release(uint64_t id) {
  return T4A_ENTRY(
      { return capi::release_handle(id, core::Kind::TestObject, "object"); });
}

T4A_API t4a_status t4a_testing_object_value(uint64_t id, uint64_t *value) {
  return T4A_ENTRY({
    // Test objects have no C handle type: the item is spelled out.
    return capi::call(
        not_null(value, "value"),
        capi::In<TestObject>{id, core::Kind::TestObject, "object"},
        [&](core::Ref<TestObject> &obj) -> t4a_status {
          if (obj->magic != TestObject::k_magic)
            return core::fail(T4A_ERROR_INTERNAL,
                              "object %llx resolved after free",
                              static_cast<unsigned long long>(id));
          *value = obj->value;
          return T4A_SUCCESS;
        });
  });
}

T4A_API uint64_t t4a_testing_live_handles(void) {
  return core::Registry::instance().live_count();
}

} // extern "C"

#endif
