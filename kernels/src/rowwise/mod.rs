//! Helpers for row-wise kernels (softmax, RoPE, cross-entropy, argmax).
