// Gradient histograms for jaxboost, as an XLA FFI custom call (CPU).
//
//   G[f, n, b] = sum of g[i] over rows i with node[i] == n and bins[i, f] == b
//   H[f, n, b] = the same sum of h[i]
//
// Inputs:  bins (N, F) uint8, ROW-major (each row's F bins contiguous);
//          g, h (N,) float32 or float64 (both the same dtype);
//          node (N,) int32; rows with node outside [0, n_nodes) are skipped.
// Outputs: G, H (F, n_nodes, n_bins) float64; n_nodes and n_bins are read from
//          the output shape, so the call needs no attributes.
//
// Why row-major: each kept row reads its node, g and h once and then touches F
// histogram slots; skipped rows (the histogram-subtraction trick leaves most rows
// out) cost little more than one int32 load. Measured on 1M rows x 28 features x
// 256 bins, one core: 1.1-1.5x faster than a tuned, blocked feature-major loop on
// uniform bins and 1.4-7x on skewed bins (feature-major updates one feature's
// histogram row after row, so rows sharing a bin form a store-to-load chain).
//
// Measured and dropped: two partial histograms alternating between rows (slower:
// twice the working set, and the F independent slots of a row already overlap the
// chains), feature-group blocking to keep the working set in L1/L2 (slower), one
// 64-bit load per 8 bins (no gain). Kept: unroll by 4 with a compile-time stride
// (10-25%), branch-free compaction of kept rows (15-30% with half the rows skipped).
//
// Accumulation: a scratch histogram of (g, h) pairs in double, one 16-byte vector
// add per update (GCC/Clang vector extension; SSE2 on x86-64, NEON on aarch64),
// laid out (node, feature, bin) so one row's updates stay within one node's
// F * n_bins block. The per-feature stride is padded to an odd number of 64-byte
// lines: with a stride of exactly 4096 bytes, rows whose features share a bin
// (skewed data) map all F slots to one L1 set and the kernel ran 15-20x slower.
// At the end the pairs are split and transposed into G and H.
//
// Single-threaded and re-entrant (no globals): multi-core comes from sharding
// rows over host devices, each calling this kernel on its own shard.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

#if defined(__GNUC__) || defined(__clang__)
typedef double v2d __attribute__((vector_size(16)));
#define JB_RESTRICT __restrict__
#else
#error "jaxboost native histogram needs GCC or Clang (vector extensions)"
#endif

// Slots per feature (in (g, h) pairs): a power of two >= n_bins plus one 64-byte
// line, i.e. an odd number of lines. A compile-time stride lets the compiler fold
// f * FS into address displacements (measured 10-40% faster than a runtime stride).
template <int64_t FS>
inline void AddRow(v2d* JB_RESTRICT a, const uint8_t* JB_RESTRICT r, int64_t F, v2d v) {
  int64_t f = 0;
  for (; f + 4 <= F; f += 4, a += 4 * FS) {
    a[r[f]] += v;
    a[FS + r[f + 1]] += v;
    a[2 * FS + r[f + 2]] += v;
    a[3 * FS + r[f + 3]] += v;
  }
  for (; f < F; ++f, a += FS) a[r[f]] += v;
}

// Accumulates rows into acc (n_nodes blocks of `ns` pairs). Rows are taken in
// blocks; a block whose rows are all kept runs straight through, otherwise the
// kept rows are first compacted branch-free (skips are unpredictable, and a
// mispredicted branch per row cost more than the compaction).
template <int64_t FS, typename T>
void Accumulate(const uint8_t* JB_RESTRICT bins, const T* JB_RESTRICT g,
                const T* JB_RESTRICT h, const int32_t* JB_RESTRICT node, int64_t N,
                int64_t F, uint32_t n_nodes, int64_t ns, v2d* JB_RESTRICT acc) {
  constexpr int64_t kBlock = 512;
  int32_t idx[kBlock];
  for (int64_t s = 0; s < N; s += kBlock) {
    const int64_t e = std::min(N, s + kBlock);
    int64_t m = 0;
    for (int64_t i = s; i < e; ++i) {
      idx[m] = static_cast<int32_t>(i - s);
      m += static_cast<uint32_t>(node[i]) < n_nodes;
    }
    if (m == e - s) {
      for (int64_t i = s; i < e; ++i) {
        const v2d v = {static_cast<double>(g[i]), static_cast<double>(h[i])};
        AddRow<FS>(acc + static_cast<int64_t>(node[i]) * ns, bins + i * F, F, v);
      }
    } else {
      for (int64_t k = 0; k < m; ++k) {
        const int64_t i = s + idx[k];
        const v2d v = {static_cast<double>(g[i]), static_cast<double>(h[i])};
        AddRow<FS>(acc + static_cast<int64_t>(node[i]) * ns, bins + i * F, F, v);
      }
    }
  }
}

template <int64_t FS, typename T>
void Histogram(const uint8_t* bins, const T* g, const T* h, const int32_t* node, int64_t N,
               int64_t F, int64_t n_nodes, int64_t n_bins, double* G, double* H) {
  // Node stride: F * FS pairs, padded to an odd number of 64-byte lines.
  int64_t ns = F * FS;
  if ((ns / 4) % 2 == 0) ns += 4;
  // Tail of 256 pairs: a bin value >= n_bins (a caller bug) lands in padding or a
  // neighbouring slot, never outside the buffer.
  const int64_t total = n_nodes * ns + 256;
  std::unique_ptr<v2d[]> acc(new v2d[total]);
  std::memset(static_cast<void*>(acc.get()), 0, sizeof(v2d) * total);

  Accumulate<FS, T>(bins, g, h, node, N, F, static_cast<uint32_t>(n_nodes), ns, acc.get());

  for (int64_t f = 0; f < F; ++f) {
    for (int64_t n = 0; n < n_nodes; ++n) {
      const v2d* a = acc.get() + n * ns + f * FS;
      double* Go = G + (f * n_nodes + n) * n_bins;
      double* Ho = H + (f * n_nodes + n) * n_bins;
      for (int64_t b = 0; b < n_bins; ++b) {
        Go[b] = a[b][0];
        Ho[b] = a[b][1];
      }
    }
  }
}

template <typename T>
void Dispatch(const uint8_t* bins, const T* g, const T* h, const int32_t* node, int64_t N,
              int64_t F, int64_t n_nodes, int64_t n_bins, double* G, double* H) {
  if (n_bins <= 16) {
    Histogram<20, T>(bins, g, h, node, N, F, n_nodes, n_bins, G, H);
  } else if (n_bins <= 32) {
    Histogram<36, T>(bins, g, h, node, N, F, n_nodes, n_bins, G, H);
  } else if (n_bins <= 64) {
    Histogram<68, T>(bins, g, h, node, N, F, n_nodes, n_bins, G, H);
  } else if (n_bins <= 128) {
    Histogram<132, T>(bins, g, h, node, N, F, n_nodes, n_bins, G, H);
  } else {
    Histogram<260, T>(bins, g, h, node, N, F, n_nodes, n_bins, G, H);
  }
}

ffi::Error HistogramImpl(ffi::Buffer<ffi::U8> bins, ffi::AnyBuffer g, ffi::AnyBuffer h,
                         ffi::Buffer<ffi::S32> node, ffi::ResultBuffer<ffi::F64> G,
                         ffi::ResultBuffer<ffi::F64> H) {
  const auto bd = bins.dimensions();
  const auto od = G->dimensions();
  if (bd.size() != 2) return ffi::Error::InvalidArgument("jaxboost_histogram: bins must be (N, F)");
  if (od.size() != 3 || H->dimensions().size() != 3)
    return ffi::Error::InvalidArgument("jaxboost_histogram: outputs must be (F, n_nodes, n_bins)");
  const int64_t N = bd[0], F = bd[1];
  const int64_t n_nodes = od[1], n_bins = od[2];
  for (int k = 0; k < 3; ++k) {
    if (H->dimensions()[k] != od[k])
      return ffi::Error::InvalidArgument("jaxboost_histogram: G and H shapes differ");
  }
  if (od[0] != F)
    return ffi::Error::InvalidArgument("jaxboost_histogram: output F differs from bins' F");
  if (n_bins < 1 || n_bins > 256)
    return ffi::Error::InvalidArgument("jaxboost_histogram: n_bins must be in [1, 256]");
  if (n_nodes < 0 || n_nodes >= (int64_t{1} << 31))
    return ffi::Error::InvalidArgument("jaxboost_histogram: bad n_nodes");
  if (N >= (int64_t{1} << 31))
    return ffi::Error::InvalidArgument("jaxboost_histogram: more than 2^31 - 1 rows");
  if (g.dimensions().size() != 1 || h.dimensions().size() != 1 ||
      node.dimensions().size() != 1 || g.dimensions()[0] != N || h.dimensions()[0] != N ||
      node.dimensions()[0] != N)
    return ffi::Error::InvalidArgument("jaxboost_histogram: g, h, node must be (N,)");
  if (g.element_type() != h.element_type())
    return ffi::Error::InvalidArgument("jaxboost_histogram: g and h dtypes differ");
  if (n_nodes == 0 || F == 0) return ffi::Error::Success();
  if (N == 0) {
    std::memset(G->typed_data(), 0, sizeof(double) * F * n_nodes * n_bins);
    std::memset(H->typed_data(), 0, sizeof(double) * F * n_nodes * n_bins);
    return ffi::Error::Success();
  }

  const uint8_t* b = bins.typed_data();
  const int32_t* nd = node.typed_data();
  double* Go = G->typed_data();
  double* Ho = H->typed_data();
  switch (g.element_type()) {
    case ffi::DataType::F32:
      Dispatch<float>(b, static_cast<const float*>(g.untyped_data()),
                      static_cast<const float*>(h.untyped_data()), nd, N, F, n_nodes, n_bins,
                      Go, Ho);
      break;
    case ffi::DataType::F64:
      Dispatch<double>(b, static_cast<const double*>(g.untyped_data()),
                       static_cast<const double*>(h.untyped_data()), nd, N, F, n_nodes, n_bins,
                       Go, Ho);
      break;
    default:
      return ffi::Error::InvalidArgument("jaxboost_histogram: g, h must be float32 or float64");
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(JaxboostHistogram, HistogramImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U8>>()   // bins (N, F)
                                  .Arg<ffi::AnyBuffer>()         // g (N,)
                                  .Arg<ffi::AnyBuffer>()         // h (N,)
                                  .Arg<ffi::Buffer<ffi::S32>>()  // node (N,)
                                  .Ret<ffi::Buffer<ffi::F64>>()  // G (F, n_nodes, n_bins)
                                  .Ret<ffi::Buffer<ffi::F64>>()  // H (F, n_nodes, n_bins)
);

// Version of the calling convention above; the Python side checks it.
extern "C" int JaxboostHistogramAbiVersion() { return 1; }
