// FunctionRef<R(A...)>: a non-owning reference to a callable, so non-template code can take the
// real-call lambdas of the wrappers without std::function's allocation. The callable must
// outlive the call it is passed to (it always does: it is a wrapper's local).
#pragma once

#include <type_traits>
#include <utility>

namespace fgpu::hook {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& callable)  // NOLINT(google-explicit-constructor): passed inline as an argument
      : object_(const_cast<void*>(static_cast<const void*>(&callable))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace fgpu::hook
