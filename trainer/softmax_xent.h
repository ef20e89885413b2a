// One sample's softmax cross-entropy, written once for both paths: Model::loss (host, model.cpp)
// and the CUDA kernel (gpu_kernels.cu, which nvcc compiles as C++17, so nothing newer here). The
// same code on both sides keeps the two paths' losses and accuracies alike. Header-only, no state;
// safe from any thread.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define TUNE_HOST_DEVICE __host__ __device__
#else
#define TUNE_HOST_DEVICE
#endif

namespace tune::trainer {

struct SoftmaxXent {
  float loss;  // -log softmax(z)[label]
  float sum;   // sum over classes of e[c]; the gradient is e[c] / sum - (c == label)
  int argmax;  // the predicted class (the first of equal maxima)
};

// Over K logits z: fills e[c] = exp(z[c] - max z) (shifted by the maximum so exp cannot overflow)
// and returns the loss, the sum of e and the arg max.
template <int K>
TUNE_HOST_DEVICE inline SoftmaxXent softmax_xent_row(const float* z, int label, float* e) {
  float mx = z[0];
  int arg = 0;
  for (int c = 1; c < K; ++c)
    if (z[c] > mx) mx = z[c], arg = c;
  float sum = 0.f;
  for (int c = 0; c < K; ++c) sum += (e[c] = std::exp(z[c] - mx));
  return {std::log(sum) - (z[label] - mx), sum, arg};
}

}  // namespace tune::trainer
