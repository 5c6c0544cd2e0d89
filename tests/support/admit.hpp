#pragma once
/// For the tests that drive a service below the surfaces (the batch manager's, with file ids and
/// times of their choosing): a request taken as admitted without admission. Only tests/ may
/// include this; production code goes through api/admission.hpp (actors/admitted.hpp).

#include <utility>

#include "actors/admitted.hpp"

namespace sy::test {

struct admit {
  template <class T>
  static actors::admitted<T> as_is(T value) {
    return actors::admitted<T>(std::move(value));
  }
};

}  // namespace sy::test
