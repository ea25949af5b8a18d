#pragma once
// A non-owning reference to a callable (what C++26 calls std::function_ref): passing a lambda
// that captures a dozen references through std::function costs a heap allocation per call,
// which the decode loop may not make. The callable must outlive the FunctionRef — use it only
// for parameters, never store it.
#include <memory>
#include <type_traits>
#include <utility>

namespace dsv4 {

template <class Sig>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, Args...>)
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): converts like std::function
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, Args... a) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(a)...);
        }) {}

  R operator()(Args... a) const { return call_(obj_, std::forward<Args>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

}  // namespace dsv4
