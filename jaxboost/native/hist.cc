// Gradient histograms for jaxboost, as an XLA FFI custom call (CPU).
//
//   G[f, n, b] = sum of g[i] over rows i with node[i] == n and bins[i, f] == b
//   H[f, n, b] = the same sum of h[i]
//
// Inputs:  bins (N, F) uint8, ROW-major (each row's F bins contiguous), or uint16
//          when features have more than 256 bins (at most kWideBins);
//          g, h (N,) float32 or float64 (both the same dtype);
//          node (N,) int32; rows with node outside [0, n_active) are skipped;
//          n_active () int32, the number of nodes histogrammed (clamped to
//          [0, n_nodes]): a traced count, so one compiled call serves levels of
//          different sizes (jaxboost.engine.grow loops over levels with arrays sized for
//          the widest one) at the cost of the active nodes only.
// Outputs: G, H (F, n_nodes, n_bins) float64; n_nodes and n_bins are read from
//          the output shape. Slots of nodes >= n_active are zero.
// Attributes: n_threads (int64 >= 1), the number of threads (see Threads below);
//             use_xla_pool (bool), false to run on std::threads (for tests, benchmarks).
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
// (10-25%), branch-free compaction of kept rows (15-30% with half the rows skipped),
// software prefetch of kept rows' bins (up to 3x with 10-25% of the rows kept).
//
// Accumulation: a scratch histogram of (g, h) pairs in double, one 16-byte vector
// add per update (GCC/Clang vector extension; SSE2 on x86-64, NEON on aarch64),
// laid out (node, feature, bin) so one row's updates stay within one node's
// F * n_bins block. The per-feature stride is padded to an odd number of 64-byte
// lines: with a stride of exactly 4096 bytes, rows whose features share a bin
// (skewed data) map all F slots to one L1 set and the kernel ran 15-20x slower.
//
// Threads (n_threads = T, at most N): two schemes, picked by the size of the scratch
// histogram (n_active * F * n_bins pairs, padded; the inactive nodes cost nothing):
//  * by rows (the scratch fits the caches, i.e. few nodes): the rows are split into T
//    contiguous blocks with fixed boundaries (block t = rows [t N / T, (t + 1) N / T)),
//    each summed into its own scratch histogram; then the output is reduced by
//    ranges of (node, feature) pairs, each slot summed over t = 0, 1, ..., T - 1 in
//    that order.
//  * by node (many nodes: >= 8 MiB of scratch, or >= 16 MiB for all T): the kept
//    rows are grouped by node (stable), then nodes (feature ranges of big nodes) are
//    summed one at a time in a per-thread buffer that stays in L2; see
//    HistogramByNode. Each slot is the sum of its rows in row order for any T.
//    Memory: 4 + 2 * sizeof(g's dtype) bytes per row for the grouping.
// Which thread runs which block, range or node does not matter, so the result is
// bit-identical from call to call for a given T. By node (and by rows with T = 1)
// every slot is a plain sequential sum over its rows in row order; by rows with
// T > 1 the float64 sums are associated per block, so results for different T may
// differ in the last bits.
//
// The work runs on XLA:CPU's intra-op thread pool (the FFI ThreadPool context)
// when the runtime provides one (jaxlib 0.10: yes, one thread per core), else (or
// with use_xla_pool false) on std::threads started for the call. The
// calling thread takes blocks too and never waits for a task to start (the pool
// may be busy or run tasks inline), only for claimed blocks to finish; state the
// tasks share is reference-counted so a task that starts after the call returned
// finds no work and touches nothing else. Re-entrant: the one global is the scratch
// pool below, behind a mutex.

#include <algorithm>
#include <cmath>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <queue>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#define JB_MMAP 1
#endif

#include "xla/ffi/api/ffi.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ffi = xla::ffi;

namespace {

#if defined(__GNUC__) || defined(__clang__)
typedef double v2d __attribute__((vector_size(16)));
#define JB_RESTRICT __restrict__
#else
#error "jaxboost native histogram needs GCC or Clang (vector extensions)"
#endif

// A loop that vectorises (the split scores) is compiled twice on x86-64 with GCC and
// glibc: for AVX2 (4 doubles a step) and for the baseline (SSE2, 2), the processor
// picks at load time (an ifunc). Without FMA and with -fno-trapping-math only, both
// give the same IEEE results as the scalar code, bit for bit.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__)
#define JB_X86_AVX2 1
#define JB_SIMD_CLONES __attribute__((target_clones("avx2", "default"), noinline))
#else
#define JB_X86_AVX2 0
#define JB_SIMD_CLONES inline
#endif

// Scratch memory of the kernels (rows' node ids and sorted (g, h), level
// histograms), pooled between calls and handed back to the system by
// JaxboostReleaseScratch (after each training call). Taken from malloc instead, a
// fit's thousands of blocks of 1-8 MB, freed on whichever of XLA's threads ran the
// call, stayed in glibc's per-thread arenas: 500,000 x 30 rows, 100 rounds, the
// process grew by 25-50 MB with every fit. Blocks come straight from mmap (whole
// pages, zeroed once), so they never enter malloc's arenas.
class ScratchPool {
 public:
  static ScratchPool& Get() {
    static ScratchPool* pool = new ScratchPool;  // never destroyed: no exit-order issues
    return *pool;
  }
  // A block of at least `bytes` bytes (64-byte aligned); its size in *cap.
  void* Take(size_t bytes, size_t* cap) {
    bytes = (std::max<size_t>(bytes, 1) + kUnit - 1) / kUnit * kUnit;
    {
      std::lock_guard<std::mutex> lock(mu_);
      size_t best = free_.size();
      for (size_t i = 0; i < free_.size(); ++i)
        if (free_[i].second >= bytes && (best == free_.size() || free_[i].second < free_[best].second))
          best = i;
      if (best < free_.size()) {
        void* p = free_[best].first;
        *cap = free_[best].second;
        free_[best] = free_.back();
        free_.pop_back();
        return p;
      }
    }
    *cap = bytes;
    return Map(bytes);
  }
  void Give(void* p, size_t cap) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.emplace_back(p, cap);
  }
  // Unmaps every block not in use; returns their bytes.
  int64_t Release() {
    std::vector<std::pair<void*, size_t>> blocks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocks.swap(free_);
    }
    int64_t n = 0;
    for (auto& b : blocks) {
      Unmap(b.first, b.second);
      n += static_cast<int64_t>(b.second);
    }
    return n;
  }

 private:
  static constexpr size_t kUnit = size_t{1} << 16;  // blocks are whole 64 KiB units
  static void* Map(size_t bytes) {
#ifdef JB_MMAP
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
#else
    return ::operator new(bytes, std::align_val_t(64));
#endif
  }
  static void Unmap(void* p, size_t bytes) {
#ifdef JB_MMAP
    munmap(p, bytes);
#else
    ::operator delete(p, std::align_val_t(64));
#endif
  }
  std::mutex mu_;
  std::vector<std::pair<void*, size_t>> free_;
};

// n elements of a trivial type T from the scratch pool, given back when it goes out of
// scope (or on reset); the contents start undefined, as with new T[n]. n <= 0 takes no
// block (get() is null): the optional buffers (counts, few-row lists) sized 0 when
// unused cost nothing on the hot paths.
template <typename T>
class Scratch {
 public:
  Scratch() = default;
  explicit Scratch(int64_t n) { reset(n); }
  ~Scratch() { Drop(); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void reset(int64_t n) {
    Drop();
    if (n <= 0) return;
    p_ = static_cast<T*>(ScratchPool::Get().Take(static_cast<size_t>(n) * sizeof(T), &cap_));
  }
  T* get() const { return p_; }
  T& operator[](int64_t i) const { return p_[i]; }

 private:
  void Drop() {
    if (p_ != nullptr) ScratchPool::Get().Give(p_, cap_);
    p_ = nullptr;
  }
  T* p_ = nullptr;
  size_t cap_ = 0;
};

// Pairs after the last histogram of a scratch buffer: a bin value >= n_bins (a caller
// bug) lands in padding or a neighbouring slot, never outside the buffer, whatever
// the bin type (uint8 bins index at most 255 slots past a feature's start, uint16
// bins 65,535).
template <typename Bn>
constexpr int64_t kTail = int64_t{1} << (8 * sizeof(Bn));

// The most bins a feature may have with uint16 bins (JaxboostHistogram only; the other
// kernels read uint8 bins, at most 256 a feature).
constexpr int64_t kWideBins = 4096;

// Slots per feature (in (g, h) pairs): a power of two >= n_bins plus one 64-byte
// line, i.e. an odd number of lines. A compile-time stride lets the compiler fold
// f * FS into address displacements (measured 10-40% faster than a runtime stride).
template <int64_t FS, typename Bn>
inline void AddRow(v2d* JB_RESTRICT a, const Bn* JB_RESTRICT r, int64_t F, v2d v) {
  int64_t f = 0;
  for (; f + 4 <= F; f += 4, a += 4 * FS) {
    a[r[f]] += v;
    a[FS + r[f + 1]] += v;
    a[2 * FS + r[f + 2]] += v;
    a[3 * FS + r[f + 3]] += v;
  }
  for (; f < F; ++f, a += FS) a[r[f]] += v;
}

// AddRow and the row's count n into the int32 counts c at the same indices (the row
// minimum of the tree kernel): one pass over the row's bins for both.
template <int64_t FS, typename Bn>
inline void AddRowCount(v2d* JB_RESTRICT a, int32_t* JB_RESTRICT c, const Bn* JB_RESTRICT r,
                        int64_t F, v2d v, int32_t n) {
  int64_t f = 0;
  for (; f + 4 <= F; f += 4, a += 4 * FS, c += 4 * FS) {
    a[r[f]] += v;
    c[r[f]] += n;
    a[FS + r[f + 1]] += v;
    c[FS + r[f + 1]] += n;
    a[2 * FS + r[f + 2]] += v;
    c[2 * FS + r[f + 2]] += n;
    a[3 * FS + r[f + 3]] += v;
    c[3 * FS + r[f + 3]] += n;
  }
  for (; f < F; ++f, a += FS, c += FS) {
    a[r[f]] += v;
    c[r[f]] += n;
  }
}

// Accumulates rows into acc (n_nodes blocks of `ns` pairs). Rows are taken in
// blocks; a block whose rows are all kept runs straight through, otherwise the
// kept rows are first compacted branch-free (skips are unpredictable, and a
// mispredicted branch per row cost more than the compaction). idx takes 8 KiB of
// stack. kCount: each row's count cnt[i] also goes into cacc, at the same indices.
template <int64_t FS, typename T, bool kCount = false, typename Bn>
void Accumulate(const Bn* JB_RESTRICT bins, const T* JB_RESTRICT g,
                const T* JB_RESTRICT h, const int32_t* JB_RESTRICT node, int64_t N,
                int64_t F, uint32_t n_nodes, int64_t ns, v2d* JB_RESTRICT acc,
                const int32_t* JB_RESTRICT cnt = nullptr, int32_t* JB_RESTRICT cacc = nullptr) {
  constexpr int64_t kBlock = 2048;
  // Kept rows scattered among skipped ones defeat the hardware prefetcher (each row's
  // bins were a cache miss: 25% of rows kept cost 80% of the time of all rows), so the
  // compacted loop prefetches the bins of the row kAhead kept rows ahead.
  constexpr int64_t kAhead = 12;
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
        const int64_t at = static_cast<int64_t>(node[i]) * ns;
        if constexpr (kCount)
          AddRowCount<FS>(acc + at, cacc + at, bins + i * F, F, v, cnt[i]);
        else
          AddRow<FS>(acc + at, bins + i * F, F, v);
      }
    } else {
      for (int64_t k = 0; k < m; ++k) {
        if (k + kAhead < m) {
          const Bn* p = bins + (s + idx[k + kAhead]) * F;
          __builtin_prefetch(p);
          __builtin_prefetch(p + F - 1);
        }
        const int64_t i = s + idx[k];
        const v2d v = {static_cast<double>(g[i]), static_cast<double>(h[i])};
        const int64_t at = static_cast<int64_t>(node[i]) * ns;
        if constexpr (kCount)
          AddRowCount<FS>(acc + at, cacc + at, bins + i * F, F, v, cnt[i]);
        else
          AddRow<FS>(acc + at, bins + i * F, F, v);
      }
    }
  }
}

// Shared by the caller and the helper tasks of one ParallelFor.
struct ForState {
  std::function<void(int64_t, int64_t)> fn;  // (item, worker); only for claimed items
  int64_t n_items = 0;
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  int64_t done = 0;  // guarded by mu
};

// Claims items until none is left. Returns after its last claimed item finished.
void RunItems(ForState& s, int64_t worker) {
  for (;;) {
    const int64_t i = s.next.fetch_add(1, std::memory_order_relaxed);
    if (i >= s.n_items) return;
    s.fn(i, worker);
    std::lock_guard<std::mutex> lock(s.mu);
    if (++s.done == s.n_items) s.cv.notify_all();
  }
}

// Runs fn(i, worker) for i = 0, ..., n_items - 1, each exactly once, on the caller
// (worker 0) and up to n_workers - 1 helpers (workers 1, 2, ...: pool tasks, or
// std::threads when pool is null). A worker runs its items one at a time.
void ParallelFor(ffi::ThreadPool* pool, int64_t n_workers, int64_t n_items,
                 std::function<void(int64_t, int64_t)> fn) {
  n_workers = std::min(n_workers, n_items);
  if (n_workers <= 1) {
    for (int64_t i = 0; i < n_items; ++i) fn(i, 0);
    return;
  }
  auto s = std::make_shared<ForState>();
  s->fn = std::move(fn);
  s->n_items = n_items;
  std::vector<std::thread> threads;
  try {
    for (int64_t w = 1; w < n_workers; ++w) {
      if (pool != nullptr) {
        pool->Schedule([s, w] { RunItems(*s, w); });  // runs inline if it cannot schedule
      } else {
        threads.emplace_back([s, w] { RunItems(*s, w); });
      }
    }
  } catch (...) {
    // Cannot start more helpers (no memory, no threads): the caller does the rest.
    // Never unwind from here: helpers already started use fn's references.
  }
  RunItems(*s, 0);
  {
    std::unique_lock<std::mutex> lock(s->mu);
    s->cv.wait(lock, [&] { return s->done == s->n_items; });
  }
  for (auto& t : threads) t.join();
}

// Few nodes: row blocks. Block t (rows [t N / nt, (t + 1) N / nt)) is summed into its
// own scratch histogram (n_nodes blocks of ns pairs), then the scratch histograms
// are reduced in block order into G and H, by ranges of (node, feature) pairs. kCount:
// the rows' counts cnt summed the same way into C (int32, laid out as G).
template <int64_t FS, typename T, bool kCount = false, typename Bn>
void HistogramByRows(const Bn* bins, const T* g, const T* h, const int32_t* node,
                     int64_t N, int64_t F, int64_t n_nodes, int64_t n_out, int64_t n_bins,
                     int64_t ns, int64_t nt, ffi::ThreadPool* pool, double* G, double* H,
                     const int32_t* cnt = nullptr, int32_t* C = nullptr) {
  // The tail (kTail): a bin value >= n_bins never reaches past the buffer.
  const int64_t total = n_nodes * ns + kTail<Bn>;
  // Scratch histograms, zeroed by the thread that fills them (first touch).
  Scratch<v2d> acc(nt * total);
  v2d* const acc0 = acc.get();
  Scratch<int32_t> cacc(kCount ? nt * total : 0);
  int32_t* const cacc0 = cacc.get();
  ParallelFor(pool, nt, nt, [&](int64_t t, int64_t) {
    v2d* a = acc0 + t * total;
    std::memset(static_cast<void*>(a), 0, sizeof(v2d) * total);
    if constexpr (kCount) std::memset(static_cast<void*>(cacc0 + t * total), 0, sizeof(int32_t) * total);
    const int64_t r0 = N * t / nt, r1 = N * (t + 1) / nt;
    Accumulate<FS, T, kCount>(bins + r0 * F, g + r0, h + r0, node + r0, r1 - r0, F,
                              static_cast<uint32_t>(n_nodes), ns, a,
                              kCount ? cnt + r0 : nullptr, kCount ? cacc0 + t * total : nullptr);
  });

  // Unit u = (node u / F, feature u % F): n_bins contiguous pairs in each scratch
  // histogram, summed in block order into a small buffer, then split.
  const int64_t units = n_nodes * F;
  const int64_t n_ranges = nt == 1 ? 1 : std::min(units, nt * 8);
  ParallelFor(pool, nt, n_ranges, [&](int64_t k, int64_t) {
    v2d buf[256];  // 256 bins at a time (uint16 bins have more)
    for (int64_t u = units * k / n_ranges, u1 = units * (k + 1) / n_ranges; u < u1; ++u) {
      const int64_t n = u / F, f = u % F;
      double* Go = G + (f * n_out + n) * n_bins;
      double* Ho = H + (f * n_out + n) * n_bins;
      for (int64_t c0 = 0; c0 < n_bins; c0 += 256) {
        const int64_t nc = std::min<int64_t>(256, n_bins - c0);
        const v2d* a = acc0 + n * ns + f * FS + c0;
        for (int64_t b = 0; b < nc; ++b) buf[b] = a[b];
        for (int64_t t = 1; t < nt; ++t) {
          const v2d* at = a + t * total;
          for (int64_t b = 0; b < nc; ++b) buf[b] += at[b];
        }
        for (int64_t b = 0; b < nc; ++b) {
          Go[c0 + b] = buf[b][0];
          Ho[c0 + b] = buf[b][1];
        }
      }
      if constexpr (kCount) {
        const int32_t* ca = cacc0 + n * ns + f * FS;
        int32_t* Co = C + (f * n_out + n) * n_bins;
        for (int64_t b = 0; b < n_bins; ++b) {
          int32_t c = ca[b];
          for (int64_t t = 1; t < nt; ++t) c += ca[t * total + b];
          Co[b] = c;
        }
      }
    }
  });
}

// Rows grouped by node, each node's rows in row order (a stable counting sort over nt
// row blocks): node n's rows are rix[start[n]] .. rix[start[n + 1] - 1] for n < nn, and
// the rows of nodes >= nn (skipped) come after them. on_row(k, i) runs as row i takes
// slot k (to copy its values alongside). Returns start (nn + 2 entries).
template <typename OnRow>
std::vector<int64_t> GroupByNode(const int32_t* node, int64_t N, uint32_t nn, int64_t nt,
                                 ffi::ThreadPool* pool, int32_t* rix, OnRow on_row) {
  const int64_t nb = static_cast<int64_t>(nn) + 1;  // bucket nn: skipped rows
  // cnt[t * nb + n]: rows of block t in bucket n; then their first position.
  std::vector<int64_t> cnt(nt * nb, 0);
  ParallelFor(pool, nt, nt, [&](int64_t t, int64_t) {
    int64_t* c = cnt.data() + t * nb;
    for (int64_t i = N * t / nt, i1 = N * (t + 1) / nt; i < i1; ++i)
      ++c[std::min(static_cast<uint32_t>(node[i]), nn)];
  });
  std::vector<int64_t> start(nb + 1);
  int64_t run = 0;
  for (int64_t n = 0; n < nb; ++n) {
    start[n] = run;
    for (int64_t t = 0; t < nt; ++t) {
      const int64_t c = cnt[t * nb + n];
      cnt[t * nb + n] = run;
      run += c;
    }
  }
  start[nb] = run;
  ParallelFor(pool, nt, nt, [&](int64_t t, int64_t) {
    int64_t* pos = cnt.data() + t * nb;
    for (int64_t i = N * t / nt, i1 = N * (t + 1) / nt; i < i1; ++i) {
      const int64_t k = pos[std::min(static_cast<uint32_t>(node[i]), nn)]++;
      rix[k] = static_cast<int32_t>(i);
      on_row(k, i);
    }
  });
  return start;
}

template <typename T>
struct GH {
  T g, h;
};

// Many nodes: a scratch histogram for all nodes would outgrow the caches (rows of
// random nodes then touch random lines of it: 3-4x slower at 256 nodes than the
// feature-major XLA scatter) and one per thread would cost a lot of memory and
// reduction. So the kept rows are grouped by node, each node keeping its rows in
// order (a stable counting sort of row indices, g and h copied alongside; row blocks
// in parallel), and then whole nodes, or feature ranges of large nodes, are
// summed in a per-thread buffer that stays in L2 and written straight to G and H.
// Every slot is then a sum over its node's rows in row order, whatever the number
// of threads: bit-identical to HistogramByRows with one thread, for any nt. kCount:
// the rows' counts cnt too, into C (int32, laid out as G).
template <int64_t FS, typename T, bool kCount = false, typename Bn>
void HistogramByNode(const Bn* bins, const T* g, const T* h, const int32_t* node,
                     int64_t N, int64_t F, int64_t n_nodes, int64_t n_out, int64_t n_bins,
                     int64_t nt, ffi::ThreadPool* pool, double* G, double* H,
                     const int32_t* row_count = nullptr, int32_t* C = nullptr) {
  constexpr int64_t kAhead = 12;  // rows ahead to prefetch, as in Accumulate
  const uint32_t nn = static_cast<uint32_t>(n_nodes);
  Scratch<int32_t> rix(N), rcnt(kCount ? N : 0);
  Scratch<GH<T>> val(N);
  const std::vector<int64_t> start =
      GroupByNode(node, N, nn, nt, pool, rix.get(), [&](int64_t k, int64_t i) {
        val[k] = GH<T>{g[i], h[i]};
        if constexpr (kCount) rcnt[k] = row_count[i];
      });

  // Work units (node, feature range). A node with more than 1/(4 nt) of the kept rows
  // is split into feature ranges (of >= 4 features) so that one big node does not
  // leave the other threads idle.
  struct Unit {
    int64_t n, f0, f1;
  };
  std::vector<Unit> units;
  units.reserve(n_nodes);
  const int64_t kept = start[n_nodes];
  const int64_t target = std::max<int64_t>(1, kept / (4 * nt));
  for (int64_t n = 0; n < n_nodes; ++n) {
    const int64_t rows = start[n + 1] - start[n];
    int64_t parts = nt == 1 ? 1 : std::min((rows + target - 1) / target, F / 4);
    parts = std::max<int64_t>(parts, 1);
    for (int64_t p = 0; p < parts; ++p)
      units.push_back({n, F * p / parts, F * (p + 1) / parts});
  }
  // One buffer per worker: F features of FS pairs, plus the tail (kTail) for
  // out-of-range bins (as in HistogramByRows).
  const int64_t bufsize = F * FS + kTail<Bn>;
  const int64_t n_bufs = std::min<int64_t>(nt, units.size());
  Scratch<v2d> bufs(n_bufs * bufsize);
  Scratch<int32_t> cbufs(kCount ? n_bufs * bufsize : 0);
  ParallelFor(pool, nt, units.size(), [&](int64_t u, int64_t w) {
    const Unit un = units[u];
    const int64_t Fu = un.f1 - un.f0;
    v2d* a = bufs.get() + w * bufsize;
    int32_t* ca = kCount ? cbufs.get() + w * bufsize : nullptr;
    std::memset(static_cast<void*>(a), 0, sizeof(v2d) * (Fu * FS + kTail<Bn>));
    if constexpr (kCount)
      std::memset(static_cast<void*>(ca), 0, sizeof(int32_t) * (Fu * FS + kTail<Bn>));
    const Bn* b0 = bins + un.f0;
    const int64_t k0 = start[un.n], k1 = start[un.n + 1];
    for (int64_t k = k0; k < k1; ++k) {
      if (k + kAhead < k1) {
        const Bn* p = b0 + static_cast<int64_t>(rix[k + kAhead]) * F;
        __builtin_prefetch(p);
        __builtin_prefetch(p + Fu - 1);
      }
      const v2d v = {static_cast<double>(val[k].g), static_cast<double>(val[k].h)};
      if constexpr (kCount)
        AddRowCount<FS>(a, ca, b0 + static_cast<int64_t>(rix[k]) * F, Fu, v, rcnt[k]);
      else
        AddRow<FS>(a, b0 + static_cast<int64_t>(rix[k]) * F, Fu, v);
    }
    for (int64_t f = un.f0; f < un.f1; ++f) {
      const v2d* af = a + (f - un.f0) * FS;
      double* Go = G + (f * n_out + un.n) * n_bins;
      double* Ho = H + (f * n_out + un.n) * n_bins;
      for (int64_t b = 0; b < n_bins; ++b) {
        Go[b] = af[b][0];
        Ho[b] = af[b][1];
      }
      if constexpr (kCount) {
        const int32_t* cf = ca + (f - un.f0) * FS;
        int32_t* Co = C + (f * n_out + un.n) * n_bins;
        for (int64_t b = 0; b < n_bins; ++b) Co[b] = cf[b];
      }
    }
  });
}

template <int64_t FS, typename T, bool kCount = false, typename Bn>
void Histogram(const Bn* bins, const T* g, const T* h, const int32_t* node, int64_t N,
               int64_t F, int64_t n_nodes, int64_t n_out, int64_t n_bins, int64_t n_threads,
               ffi::ThreadPool* pool, double* G, double* H, const int32_t* cnt = nullptr,
               int32_t* C = nullptr) {
  // Node stride: F * FS pairs, padded to an odd number of 64-byte lines.
  int64_t ns = F * FS;
  if ((ns / 4) % 2 == 0) ns += 4;
  const int64_t scratch_bytes = (n_nodes * ns + kTail<Bn>) * static_cast<int64_t>(sizeof(v2d));
  const int64_t nt_rows = std::max<int64_t>(1, std::min(n_threads, N));
  // Rows by node once the scratch histograms outgrow the caches. Measured (1M rows,
  // 28 features, 256 bins, Zen 5, 2 MiB L2 per core, 32 MiB L3): 64 nodes (7.4 MiB)
  // row blocks 21 ms vs by node 24 ms on one thread; 128 nodes (15 MiB) 39 vs 24 ms;
  // 256 nodes 142 vs 24 ms; on two threads 64 nodes 12.6 vs 14, 128 nodes 33 vs 14.
  constexpr int64_t kByNodeBytes = int64_t{8} << 20;        // per thread
  constexpr int64_t kByNodeTotalBytes = int64_t{16} << 20;  // all threads
  if (scratch_bytes >= kByNodeBytes || nt_rows * scratch_bytes >= kByNodeTotalBytes) {
    HistogramByNode<FS, T, kCount>(bins, g, h, node, N, F, n_nodes, n_out, n_bins, nt_rows, pool,
                                   G, H, cnt, C);
  } else {  // the T scratch histograms take < 16 MiB
    HistogramByRows<FS, T, kCount>(bins, g, h, node, N, F, n_nodes, n_out, n_bins, ns, nt_rows,
                                   pool, G, H, cnt, C);
  }
  // Output slots of the inactive nodes [n_nodes, n_out) are zero.
  if (n_out > n_nodes) {
    for (int64_t f = 0; f < F; ++f) {
      const int64_t o = (f * n_out + n_nodes) * n_bins, len = (n_out - n_nodes) * n_bins;
      std::memset(static_cast<void*>(G + o), 0, sizeof(double) * len);
      std::memset(static_cast<void*>(H + o), 0, sizeof(double) * len);
      if constexpr (kCount) std::memset(static_cast<void*>(C + o), 0, sizeof(int32_t) * len);
    }
  }
}

// Histogram for n_bins (its padded width FS); with cnt (int32 per row, or null) the
// rows' counts too, into C (int32, laid out as G).
template <typename T, typename Bn>
void Dispatch(const Bn* bins, const T* g, const T* h, const int32_t* node, int64_t N,
              int64_t F, int64_t n_nodes, int64_t n_out, int64_t n_bins, int64_t nt,
              ffi::ThreadPool* pool, double* G, double* H, const int32_t* cnt = nullptr,
              int32_t* C = nullptr) {
  auto run = [&](auto fs) {
    constexpr int64_t FS = decltype(fs)::value;
    if (cnt != nullptr)
      Histogram<FS, T, true>(bins, g, h, node, N, F, n_nodes, n_out, n_bins, nt, pool, G, H, cnt,
                             C);
    else
      Histogram<FS, T>(bins, g, h, node, N, F, n_nodes, n_out, n_bins, nt, pool, G, H);
  };
  if (n_bins <= 16) {
    run(std::integral_constant<int64_t, 20>{});
  } else if (n_bins <= 32) {
    run(std::integral_constant<int64_t, 36>{});
  } else if (n_bins <= 64) {
    run(std::integral_constant<int64_t, 68>{});
  } else if (n_bins <= 128) {
    run(std::integral_constant<int64_t, 132>{});
  } else if (sizeof(Bn) == 1 || n_bins <= 256) {
    run(std::integral_constant<int64_t, 260>{});
  } else if constexpr (sizeof(Bn) > 1) {  // uint16 bins: up to kWideBins
    if (n_bins <= 512) {
      run(std::integral_constant<int64_t, 516>{});
    } else if (n_bins <= 1024) {
      run(std::integral_constant<int64_t, 1028>{});
    } else if (n_bins <= 2048) {
      run(std::integral_constant<int64_t, 2052>{});
    } else {
      run(std::integral_constant<int64_t, 4100>{});
    }
  }
}

ffi::Error HistogramImpl(ffi::ThreadPool thread_pool, ffi::AnyBuffer bins,
                         ffi::AnyBuffer g, ffi::AnyBuffer h, ffi::Buffer<ffi::S32> node,
                         ffi::Buffer<ffi::S32> n_active, ffi::ResultBuffer<ffi::F64> G, ffi::ResultBuffer<ffi::F64> H,
                         int64_t n_threads, bool use_xla_pool) {
  const auto bd = bins.dimensions();
  const auto od = G->dimensions();
  if (bd.size() != 2) return ffi::Error::InvalidArgument("jaxboost_histogram: bins must be (N, F)");
  if (od.size() != 3 || H->dimensions().size() != 3)
    return ffi::Error::InvalidArgument("jaxboost_histogram: outputs must be (F, n_nodes, n_bins)");
  const int64_t N = bd[0], F = bd[1];
  const int64_t n_out = od[1], n_bins = od[2];
  for (int k = 0; k < 3; ++k) {
    if (H->dimensions()[k] != od[k])
      return ffi::Error::InvalidArgument("jaxboost_histogram: G and H shapes differ");
  }
  if (od[0] != F)
    return ffi::Error::InvalidArgument("jaxboost_histogram: output F differs from bins' F");
  const bool wide = bins.element_type() == ffi::DataType::U16;
  if (!wide && bins.element_type() != ffi::DataType::U8)
    return ffi::Error::InvalidArgument("jaxboost_histogram: bins must be uint8 or uint16");
  if (n_bins < 1 || n_bins > (wide ? kWideBins : 256))
    return ffi::Error::InvalidArgument(
        wide ? "jaxboost_histogram: n_bins must be in [1, 4096] for uint16 bins"
             : "jaxboost_histogram: n_bins must be in [1, 256] for uint8 bins");
  if (n_out < 0 || n_out >= (int64_t{1} << 31))
    return ffi::Error::InvalidArgument("jaxboost_histogram: bad n_nodes");
  if (n_active.element_count() != 1)
    return ffi::Error::InvalidArgument("jaxboost_histogram: n_active must be a scalar");
  // The nodes histogrammed: [0, n_active) clamped to [0, n_out]; the rest are zero.
  const int64_t n_nodes =
      std::min<int64_t>(n_out, std::max<int64_t>(0, *n_active.typed_data()));
  if (N >= (int64_t{1} << 31))
    return ffi::Error::InvalidArgument("jaxboost_histogram: more than 2^31 - 1 rows");
  if (g.dimensions().size() != 1 || h.dimensions().size() != 1 ||
      node.dimensions().size() != 1 || g.dimensions()[0] != N || h.dimensions()[0] != N ||
      node.dimensions()[0] != N)
    return ffi::Error::InvalidArgument("jaxboost_histogram: g, h, node must be (N,)");
  if (g.element_type() != h.element_type())
    return ffi::Error::InvalidArgument("jaxboost_histogram: g and h dtypes differ");
  if (n_threads < 1 || n_threads > 4096)
    return ffi::Error::InvalidArgument("jaxboost_histogram: n_threads must be in [1, 4096]");
  if (n_out == 0 || F == 0) return ffi::Error::Success();
  if (N == 0 || n_nodes == 0) {
    std::memset(G->typed_data(), 0, sizeof(double) * F * n_out * n_bins);
    std::memset(H->typed_data(), 0, sizeof(double) * F * n_out * n_bins);
    return ffi::Error::Success();
  }
  // XLA's intra-op pool when the runtime has one (num_threads() is 0 when it has not)
  // and the caller did not ask for std::threads.
  ffi::ThreadPool* pool =
      use_xla_pool && thread_pool.num_threads() > 0 ? &thread_pool : nullptr;

  const int32_t* nd = node.typed_data();
  double* Go = G->typed_data();
  double* Ho = H->typed_data();
  auto run = [&](const auto* b) -> bool {
    switch (g.element_type()) {
      case ffi::DataType::F32:
        Dispatch<float>(b, static_cast<const float*>(g.untyped_data()),
                        static_cast<const float*>(h.untyped_data()), nd, N, F, n_nodes, n_out,
                        n_bins, n_threads, pool, Go, Ho);
        return true;
      case ffi::DataType::F64:
        Dispatch<double>(b, static_cast<const double*>(g.untyped_data()),
                         static_cast<const double*>(h.untyped_data()), nd, N, F, n_nodes, n_out,
                         n_bins, n_threads, pool, Go, Ho);
        return true;
      default:
        return false;
    }
  };
  // Scratch memory is allocated on the calling thread (before any task runs), so
  // running out of it is reported as an error instead of crashing the process.
  try {
    const bool ok = wide ? run(static_cast<const uint16_t*>(bins.untyped_data()))
                         : run(static_cast<const uint8_t*>(bins.untyped_data()));
    if (!ok)
      return ffi::Error::InvalidArgument("jaxboost_histogram: g, h must be float32 or float64");
  } catch (const std::bad_alloc&) {
    return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                      "jaxboost_histogram: out of memory for scratch histograms");
  }
  return ffi::Error::Success();
}

// ---------------------------------------------------------------------------------
// Histograms of C channels at once (JaxboostHistogramChannels): the gradients and
// Hessian entries of vector leaves, each row's C values added to its bin of every
// feature in one pass over its bins (JaxboostHistogram takes two channels a pass).
// Output S (F, n_out, n_bins, C) float64, the layout of JaxboostVectorSplits. The two
// schemes of Histogram, with the same thresholds on the scratch size (here
// n_nodes * F * n_bins * C doubles): few nodes, row blocks (one per thread, each into
// its own scratch histogram, reduced in block order); many nodes, rows grouped by node
// and summed in row order per (node, feature range). Either way the result is the
// same for a given thread count, and equals JaxboostHistogram's, channel pair by
// channel pair, under the same scheme and thread count (with one thread: row order).

// Adds rows' C channel values at their bins of features [f0, f0 + Fu), into blocks of
// n_bins * C doubles: feature f's block of node n at out + n * node_stride + (f - f0) *
// fstride. Rows: rix[k] for k in [k0, k1) (all of node 0 of out: grouped by node), or,
// with rix null, rows [k0, k1) whose node is below nn (the others skipped). A bin
// above top stays in its feature's block. v: room for C doubles.
template <typename T>
__attribute__((always_inline)) inline void AddRowsChannels(
    const uint8_t* JB_RESTRICT bins, int64_t F, int64_t f0, int64_t Fu, const T* JB_RESTRICT vals,
    int64_t C, const int32_t* JB_RESTRICT rix, const int32_t* JB_RESTRICT node, uint32_t nn,
    int64_t k0, int64_t k1, double* JB_RESTRICT out, int64_t node_stride, int64_t fstride,
    int32_t top, double* JB_RESTRICT v) {
  constexpr int64_t kAhead = 12;  // rows ahead to prefetch, as in Accumulate
  for (int64_t k = k0; k < k1; ++k) {
    int64_t i = k;
    double* base = out;
    if (rix != nullptr) {
      if (k + kAhead < k1) {
        const int64_t ia = rix[k + kAhead];
        __builtin_prefetch(bins + ia * F + f0);
        __builtin_prefetch(vals + ia * C);
      }
      i = rix[k];
    } else {
      const uint32_t n = static_cast<uint32_t>(node[k]);
      if (n >= nn) continue;
      base = out + n * node_stride;
    }
    const T* JB_RESTRICT src = vals + i * C;
    for (int64_t c = 0; c < C; ++c) v[c] = static_cast<double>(src[c]);
    const uint8_t* JB_RESTRICT r = bins + i * F + f0;
    for (int64_t f = 0; f < Fu; ++f) {
      double* JB_RESTRICT dst = base + f * fstride + std::min<int32_t>(r[f], top) * C;
      for (int64_t c = 0; c < C; ++c) dst[c] += v[c];
    }
  }
}

// AddRowsChannels compiled for AVX2 too (float32 rows, the vector leaves' case), chosen
// at load time; float64 rows take the baseline build.
JB_SIMD_CLONES void AddRowsChannelsF32(const uint8_t* bins, int64_t F, int64_t f0, int64_t Fu,
                                       const float* vals, int64_t C, const int32_t* rix,
                                       const int32_t* node, uint32_t nn, int64_t k0, int64_t k1,
                                       double* out, int64_t node_stride, int64_t fstride,
                                       int32_t top, double* v) {
  AddRowsChannels(bins, F, f0, Fu, vals, C, rix, node, nn, k0, k1, out, node_stride, fstride, top,
                  v);
}

inline void AddRows(const uint8_t* bins, int64_t F, int64_t f0, int64_t Fu, const float* vals,
                    int64_t C, const int32_t* rix, const int32_t* node, uint32_t nn, int64_t k0,
                    int64_t k1, double* out, int64_t node_stride, int64_t fstride, int32_t top,
                    double* v) {
  AddRowsChannelsF32(bins, F, f0, Fu, vals, C, rix, node, nn, k0, k1, out, node_stride, fstride,
                     top, v);
}

inline void AddRows(const uint8_t* bins, int64_t F, int64_t f0, int64_t Fu, const double* vals,
                    int64_t C, const int32_t* rix, const int32_t* node, uint32_t nn, int64_t k0,
                    int64_t k1, double* out, int64_t node_stride, int64_t fstride, int32_t top,
                    double* v) {
  AddRowsChannels(bins, F, f0, Fu, vals, C, rix, node, nn, k0, k1, out, node_stride, fstride, top,
                  v);
}

template <typename T>
void ChannelsByRows(const uint8_t* bins, const T* vals, const int32_t* node, int64_t N,
                    int64_t F, int64_t C, int64_t n_nodes, int64_t n_out, int64_t n_bins,
                    int64_t nt, ffi::ThreadPool* pool, double* S) {
  const uint32_t nn = static_cast<uint32_t>(n_nodes);
  const int64_t BC = n_bins * C, per_node = F * BC, total = n_nodes * per_node;
  const int32_t top = static_cast<int32_t>(n_bins - 1);
  const int64_t vs = (C + 15) / 16 * 16 + 16;  // apart by 128+ bytes: no false sharing
  Scratch<double> vbuf(nt * vs);
  if (nt == 1) {  // straight into S (its inactive nodes are zeroed by the caller)
    for (int64_t f = 0; f < F; ++f)
      std::memset(static_cast<void*>(S + f * n_out * BC), 0, sizeof(double) * n_nodes * BC);
    AddRows(bins, F, 0, F, vals, C, nullptr, node, nn, 0, N, S, BC, n_out * BC, top, vbuf.get());
    return;
  }
  Scratch<double> acc(nt * total);
  double* const acc0 = acc.get();
  ParallelFor(pool, nt, nt, [&](int64_t t, int64_t) {
    double* a = acc0 + t * total;
    std::memset(static_cast<void*>(a), 0, sizeof(double) * total);
    AddRows(bins, F, 0, F, vals, C, nullptr, node, nn, N * t / nt, N * (t + 1) / nt, a, per_node,
            BC, top, vbuf.get() + t * vs);
  });
  // Unit u = (node u / F, feature u % F): BC contiguous slots in each scratch histogram,
  // summed in block order straight into S.
  const int64_t units = n_nodes * F;
  const int64_t n_ranges = std::min(units, nt * 8);
  ParallelFor(pool, nt, n_ranges, [&](int64_t k, int64_t) {
    for (int64_t u = units * k / n_ranges, u1 = units * (k + 1) / n_ranges; u < u1; ++u) {
      const int64_t n = u / F, f = u % F;
      const double* a = acc0 + n * per_node + f * BC;
      double* o = S + (f * n_out + n) * BC;
      std::memcpy(o, a, sizeof(double) * BC);
      for (int64_t t = 1; t < nt; ++t) {
        const double* at = a + t * total;
        for (int64_t j = 0; j < BC; ++j) o[j] += at[j];
      }
    }
  });
}

constexpr int64_t kChannelUnitBytes = int64_t{256} << 10;

template <typename T>
void ChannelsByNode(const uint8_t* bins, const T* vals, const int32_t* node, int64_t N,
                    int64_t F, int64_t C, int64_t n_nodes, int64_t n_out, int64_t n_bins,
                    int64_t nt, ffi::ThreadPool* pool, double* S) {
  const int64_t BC = n_bins * C;
  Scratch<int32_t> rix(N);
  const std::vector<int64_t> start = GroupByNode(node, N, static_cast<uint32_t>(n_nodes), nt,
                                                 pool, rix.get(), [](int64_t, int64_t) {});
  // Units (node, feature range): a range's block of S within kChannelUnitBytes, and a
  // node with more than 1 / (4 nt) of the kept rows cut into more ranges.
  struct Unit {
    int64_t n, f0, f1;
  };
  std::vector<Unit> units;
  const int64_t per_block = std::max<int64_t>(1, kChannelUnitBytes / (8 * BC));
  const int64_t target = std::max<int64_t>(1, start[n_nodes] / (4 * nt));
  for (int64_t n = 0; n < n_nodes; ++n) {
    const int64_t rows = start[n + 1] - start[n];
    int64_t parts = (F + per_block - 1) / per_block;
    if (nt > 1) parts = std::max(parts, std::min((rows + target - 1) / target, F / 4));
    parts = std::max<int64_t>(std::min(parts, F), 1);
    for (int64_t p = 0; p < parts; ++p) units.push_back({n, F * p / parts, F * (p + 1) / parts});
  }
  const int64_t vs = (C + 15) / 16 * 16 + 16;  // apart by 128+ bytes: no false sharing
  Scratch<double> vbuf(nt * vs);
  const int32_t top = static_cast<int32_t>(n_bins - 1);
  const int64_t fstride = n_out * BC;
  ParallelFor(pool, nt, units.size(), [&](int64_t u, int64_t w) {
    const Unit un = units[u];
    const int64_t Fu = un.f1 - un.f0;
    double* v = vbuf.get() + w * vs;
    double* const base = S + (un.f0 * n_out + un.n) * BC;  // feature f0's block
    for (int64_t f = 0; f < Fu; ++f)
      std::memset(static_cast<void*>(base + f * fstride), 0, sizeof(double) * BC);
    AddRows(bins, F, un.f0, Fu, vals, C, rix.get(), nullptr, 0, start[un.n], start[un.n + 1], base,
            0, fstride, top, v);
  });
}

template <typename T>
void HistogramChannels(const uint8_t* bins, const T* vals, const int32_t* node, int64_t N,
                       int64_t F, int64_t C, int64_t n_nodes, int64_t n_out, int64_t n_bins,
                       int64_t n_threads, ffi::ThreadPool* pool, double* S) {
  const int64_t nt = std::max<int64_t>(1, std::min(n_threads, N));
  // Histogram's rule: rows by node once the scratch histograms outgrow the caches.
  const int64_t scratch_bytes = n_nodes * F * n_bins * C * static_cast<int64_t>(sizeof(double));
  if (scratch_bytes >= (int64_t{8} << 20) || nt * scratch_bytes >= (int64_t{16} << 20))
    ChannelsByNode(bins, vals, node, N, F, C, n_nodes, n_out, n_bins, nt, pool, S);
  else
    ChannelsByRows(bins, vals, node, N, F, C, n_nodes, n_out, n_bins, nt, pool, S);
  // Slots of the inactive nodes [n_nodes, n_out) are zero.
  if (n_out > n_nodes) {
    const int64_t BC = n_bins * C;
    for (int64_t f = 0; f < F; ++f)
      std::memset(static_cast<void*>(S + (f * n_out + n_nodes) * BC), 0,
                  sizeof(double) * (n_out - n_nodes) * BC);
  }
}

ffi::Error HistogramChannelsImpl(ffi::ThreadPool thread_pool, ffi::Buffer<ffi::U8> bins,
                                 ffi::AnyBuffer vals, ffi::Buffer<ffi::S32> node,
                                 ffi::Buffer<ffi::S32> n_active, ffi::ResultBuffer<ffi::F64> S,
                                 int64_t n_threads, bool use_xla_pool) {
  const char* name = "jaxboost_histogram_channels";
  const auto bd = bins.dimensions();
  const auto vd = vals.dimensions();
  const auto od = S->dimensions();
  if (bd.size() != 2) return ffi::Error::InvalidArgument(std::string(name) + ": bins must be (N, F)");
  const int64_t N = bd[0], F = bd[1];
  if (vd.size() != 2 || vd[0] != N)
    return ffi::Error::InvalidArgument(std::string(name) + ": vals must be (N, C)");
  const int64_t C = vd[1];
  if (od.size() != 4 || od[0] != F || od[3] != C)
    return ffi::Error::InvalidArgument(std::string(name) + ": S must be (F, n_nodes, n_bins, C)");
  const int64_t n_out = od[1], n_bins = od[2];
  if (n_bins < 1 || n_bins > 256)
    return ffi::Error::InvalidArgument(std::string(name) + ": n_bins must be in [1, 256]");
  if (n_out < 0 || n_out >= (int64_t{1} << 31))
    return ffi::Error::InvalidArgument(std::string(name) + ": bad n_nodes");
  if (n_active.element_count() != 1)
    return ffi::Error::InvalidArgument(std::string(name) + ": n_active must be a scalar");
  if (N >= (int64_t{1} << 31))
    return ffi::Error::InvalidArgument(std::string(name) + ": more than 2^31 - 1 rows");
  if (node.dimensions().size() != 1 || node.dimensions()[0] != N)
    return ffi::Error::InvalidArgument(std::string(name) + ": node must be (N,)");
  if (n_threads < 1 || n_threads > 4096)
    return ffi::Error::InvalidArgument(std::string(name) + ": n_threads must be in [1, 4096]");
  const int64_t n_nodes = std::min<int64_t>(n_out, std::max<int64_t>(0, *n_active.typed_data()));
  double* So = S->typed_data();
  if (n_out == 0 || F == 0 || C == 0) return ffi::Error::Success();
  if (N == 0 || n_nodes == 0) {
    std::memset(So, 0, sizeof(double) * F * n_out * n_bins * C);
    return ffi::Error::Success();
  }
  ffi::ThreadPool* pool = use_xla_pool && thread_pool.num_threads() > 0 ? &thread_pool : nullptr;
  const int64_t nt = n_threads;
  try {
    switch (vals.element_type()) {
      case ffi::DataType::F32:
        HistogramChannels<float>(bins.typed_data(), static_cast<const float*>(vals.untyped_data()),
                                 node.typed_data(), N, F, C, n_nodes, n_out, n_bins, nt, pool, So);
        break;
      case ffi::DataType::F64:
        HistogramChannels<double>(bins.typed_data(),
                                  static_cast<const double*>(vals.untyped_data()),
                                  node.typed_data(), N, F, C, n_nodes, n_out, n_bins, nt, pool, So);
        break;
      default:
        return ffi::Error::InvalidArgument(std::string(name) + ": vals must be float32 or float64");
    }
  } catch (const std::bad_alloc&) {
    return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                      std::string(name) + ": out of memory for scratch");
  }
  return ffi::Error::Success();
}

// ---------------------------------------------------------------------------------
// One whole tree, grown in one call (JaxboostGrowTree): the level loop of
// jaxboost.engine.grow.grow_tree on one device (interaction and monotone constraints,
// min_samples_leaf; categorical features through JaxboostGrowTreeCat, without monotone
// signs), with the histograms above. What it saves is the fixed
// cost of the XLA level loop (about a hundred small operations per level, each a few
// microseconds): on data of a few thousand rows that cost, not arithmetic, set the
// time of a tree. Its work follows the live nodes: each level histograms, scans and
// routes only the nodes that exist (children of the splits of the level before).
//
// Inputs:  bins (N, F) uint8 row-major, bin n_bins - 1 = missing; g, h (N,) float32
//          or float64; hyper (6,) float32 = learning_rate, reg_lambda, reg_alpha,
//          gamma, min_child_weight, max_delta_step (jaxboost.engine.split.TreeHyper);
//          root (2,) float64 = the root's G and H; forward_ok (F,) bool; level_sets
//          (max_depth, F) bool, the features each level may draw from; node_key (2,)
//          uint32 and node_ratio (1,) float32, the per-node draw (read only when the
//          attribute colsample is true; see NodeFeatures); sets (C, F) bool and mono
//          (F,) int32, interaction and monotone constraints ((0, F), (0,): none);
//          counts (N,) float32 and min_leaf (1,) int32, the row minimum ((0,): none).
// Outputs: heap arrays of M = 2**(max_depth + 1) - 1 nodes: feature, tbin (int32),
//          default_left, is_split (bool), gain (float32), Gn, Hn (float64 node sums);
//          leaf (N,) int32, the leaf of every row; both after gamma post-pruning (a
//          pruned node's outputs are those of a node that does not split).
// Attributes: max_depth (>= 1), n_threads, use_xla_pool.
//
// Arithmetic (the contract of jaxboost.engine.split, in the same precision):
//  * histograms: the kernel above; below the root only the smaller child of each
//    pair (by Hessian sum, ties to the left) is histogrammed, its sibling is the
//    parent's histogram minus it;
//  * prefix sums over bins in float64, in bin order (as XGBoost's scan);
//  * node scores in float64 rounded to float32, gains summed in float32; candidate
//    order features ascending, within a feature pass A (thresholds ascending,
//    missing right; only where forward_ok) then pass B (descending, missing left);
//    the first strictly greater gain wins. A candidate is scored only when both
//    children have H >= min_child_weight (and, with a row minimum, >= min_leaf
//    counted rows), and a candidate whose bin is empty (no sums, no counted rows) is
//    skipped (its sums and counts, hence its gain, equal the candidate before it in
//    its pass, which it cannot beat);
//  * a node splits when its best gain > 1e-6 (XGBoost's kRtEps); its children's
//    sums are the float64 sums, in bin order, of the split feature's bins going
//    each way.
// Deterministic: for a given n_threads every sum is associated the same way on every
// call; the split search and the routing give the same answer for any n_threads.

constexpr float kMinSplitGain = 1e-6f;

struct Hyp {
  double lam, alpha, mcw, mds;
  float lam32;
};

inline double ThresholdL1(double G, double alpha) {
  return G > alpha ? G - alpha : (G < -alpha ? G + alpha : 0.0);
}

// jaxboost.engine.split.newton_weight in float64.
inline double NewtonWeight(double G, double H, const Hyp& p) {
  const bool used = (H >= p.mcw) && (H > 0);
  double w = -ThresholdL1(G, p.alpha) / ((used && H + p.lam > 0) ? H + p.lam : 1.0);
  if (p.mds > 0) w = std::min(std::max(w, -p.mds), p.mds);
  return used ? w : 0.0;
}

// jaxboost.engine.split.calc_score (and _plain_score when mds <= 0).
inline float Score(double G, double H, const Hyp& p) {
  if (H <= 0) return 0.0f;
  const double safe = H + p.lam > 0 ? H + p.lam : 1.0;
  const double t = ThresholdL1(G, p.alpha);
  if (!(p.mds > 0)) return static_cast<float>(t * t / safe);
  // newton_weight in float64, then the clipped score from its float32 value
  const float w32 = static_cast<float>(NewtonWeight(G, H, p));
  const float quad32 = (static_cast<float>(H) + p.lam32) * (w32 * w32);
  const double lin = 2.0 * static_cast<double>(static_cast<float>(G)) * static_cast<double>(w32);
  return static_cast<float>(-(lin + static_cast<double>(quad32)));
}

// Monotone constraints (jaxboost.engine.constraints): bounded_weight, the float32
// Newton weight clipped to a node's bounds [lo, hi] ...
inline float BoundedWeight(double G, double H, const Hyp& p, float lo, float hi) {
  return std::min(std::max(static_cast<float>(NewtonWeight(G, H, p)), lo), hi);
}

// ... and score_given_weight, -(2 G w + (H + lambda) w^2) in XGBoost's float32 steps:
// each operation in float64 on float32 operands, rounded once.
inline float ScoreGivenWeight(double G, double H, float w, const Hyp& p) {
  if (H <= 0) return 0.0f;
  const double g = static_cast<float>(G), h = static_cast<float>(H), wd = w;
  const double lin = static_cast<float>(2.0 * g * wd);
  const double hl = static_cast<float>(h + static_cast<double>(p.lam32));
  const double quad = static_cast<float>(hl * static_cast<double>(static_cast<float>(wd * wd)));
  return static_cast<float>(-(lin + quad));
}

// Heap node i's score before its split search under monotone bounds (lo, hi: every heap
// node's): the score of its weight within its parent's bounds.
inline float BoundedNodeScore(double G, double H, int64_t i, const Hyp& p, const float* lo,
                              const float* hi) {
  const int64_t pa = i > 0 ? (i - 1) / 2 : 0;
  return ScoreGivenWeight(G, H, BoundedWeight(G, H, p, lo[pa], hi[pa]), p);
}

// The bounds of split node i's children (constraints.after_level): the midpoint of their
// weights, bounded by i's, bounds one side of each by the split feature's sign.
inline void ChildBounds(int64_t i, double GL, double HL, double GR, double HR, int32_t sign,
                        const Hyp& p, float* lo, float* hi) {
  const float wl = BoundedWeight(GL, HL, p, lo[i], hi[i]);
  const float wr = BoundedWeight(GR, HR, p, lo[i], hi[i]);
  const float mid = (wl + wr) / 2.0f;
  const int64_t li = 2 * i + 1, ri = 2 * i + 2;
  lo[li] = sign < 0 ? mid : lo[i];
  hi[li] = sign > 0 ? mid : hi[i];
  lo[ri] = sign > 0 ? mid : lo[i];
  hi[ri] = sign < 0 ? mid : hi[i];
}

// A node's monotone rules in the scan: its bounds and the feature's sign.
struct MonoNode {
  float lo, hi;
  int32_t sign;
};

struct Cand {
  float gain;
  int32_t tbin;  // categorical: the candidate's slot j (jaxboost.engine.categorical)
  bool dl;
  bool cat = false;
};

// One pass's candidates that are scored, in scan order (at most the feature's bins),
// and room for its non-empty slots (nz: bins + 4): a view on a ScanStore.
struct ScanBuf {
  double* GL;
  double* HL;
  double* GR;
  double* HR;
  float* gain;
  int32_t* t;
  int32_t* nz;
};

// ScanBuf's storage for features of at most Cap bins (on the stack for 256 bins; on the
// heap for uint16 bins, whose Cap of kWideBins takes 180 KiB).
template <int64_t Cap>
struct ScanStore {
  double GL[Cap], HL[Cap], GR[Cap], HR[Cap];
  float gain[Cap];
  int32_t t[Cap];
  int32_t nz[Cap + 4];
  ScanBuf view() { return ScanBuf{GL, HL, GR, HR, gain, t, nz}; }
};

// A ScanBuf for features of B bins, its storage in one of the two holders.
inline ScanBuf ScanBufFor(int64_t B, ScanStore<256>* small,
                          std::unique_ptr<ScanStore<kWideBins>>* wide) {
  if (B <= 256) return small->view();
  if (*wide == nullptr) *wide = std::make_unique<ScanStore<kWideBins>>();
  return (*wide)->view();
}

// Scores of buf's first m candidates: the plain score in one loop the compiler
// vectorises (its selects need -fno-trapping-math, see _build.FLAGS), the clipped one
// (max_delta_step > 0) scalar.
JB_SIMD_CLONES void Gains(ScanBuf& s, int64_t m, float sp, const Hyp& p) {
  if (p.mds > 0) {
    for (int64_t i = 0; i < m; ++i)
      s.gain[i] = (Score(s.GL[i], s.HL[i], p) + Score(s.GR[i], s.HR[i], p)) - sp;
    return;
  }
  const double lam = p.lam, alpha = p.alpha;
  for (int64_t i = 0; i < m; ++i) {
    const double gl = s.GL[i], hl = s.HL[i], gr = s.GR[i], hr = s.HR[i];
    const double tl = gl > alpha ? gl - alpha : (gl < -alpha ? gl + alpha : 0.0);
    const double tr = gr > alpha ? gr - alpha : (gr < -alpha ? gr + alpha : 0.0);
    const double dl = hl + lam > 0 ? hl + lam : 1.0;
    const double dr = hr + lam > 0 ? hr + lam : 1.0;
    const float sl = hl <= 0 ? 0.0f : static_cast<float>(tl * tl / dl);
    const float sr = hr <= 0 ? 0.0f : static_cast<float>(tr * tr / dr);
    s.gain[i] = (sl + sr) - sp;
  }
}

// Gains under monotone rules (constraints.gain_rule): both children's weights bounded,
// scores given those weights, -inf where the weights are out of order for the sign.
void GainsMono(ScanBuf& s, int64_t m, float sp, const Hyp& p, const MonoNode& mn) {
  for (int64_t i = 0; i < m; ++i) {
    const float wl = BoundedWeight(s.GL[i], s.HL[i], p, mn.lo, mn.hi);
    const float wr = BoundedWeight(s.GR[i], s.HR[i], p, mn.lo, mn.hi);
    const float gain =
        (ScoreGivenWeight(s.GL[i], s.HL[i], wl, p) + ScoreGivenWeight(s.GR[i], s.HR[i], wr, p)) -
        sp;
    const bool ordered = mn.sign == 0 || (mn.sign > 0 && wl <= wr) || (mn.sign < 0 && wl >= wr);
    s.gain[i] = ordered ? gain : -std::numeric_limits<float>::infinity();
  }
}

// The slots 0 .. V - 1 (V <= 256) of hist that are not empty, ascending, into nz (room
// for V + 4); returns their number. A slot is empty when its G and H are both +-0 (bit
// tests, so that no floating-point mode, such as denormals-are-zero on XLA's threads,
// changes which slots count).
// Whether a histogram slot holds G or H other than +-0 (its bits: a vector's element
// has no address in Clang).
inline bool SlotUsed(const v2d& x) {
  uint64_t gh[2];
  std::memcpy(gh, &x, 16);
  return ((gh[0] | gh[1]) << 1) != 0;
}

// Whether slot j holds sums or, with counts rc (not null), counted rows.
inline bool SlotHolds(const v2d* hist, const int32_t* rc, int64_t j) {
  return SlotUsed(hist[j]) || (rc != nullptr && rc[j] != 0);
}

inline int64_t NonEmptyScalar(const v2d* hist, const int32_t* rc, int64_t j, int64_t V,
                              int32_t* nz, int64_t nnz) {
  for (; j < V; ++j) {
    nz[nnz] = static_cast<int32_t>(j);
    nnz += static_cast<int64_t>(SlotHolds(hist, rc, j));
  }
  return nnz;
}

#if JB_X86_AVX2
// Four slots a step: one 64-bit test per slot of (G | H) << 1, then the non-empty
// slots' numbers packed to the front of a vector by a shuffle from a table.
struct PackTable {
  alignas(16) uint8_t ctrl[16][16];
  PackTable() {
    for (int m = 0; m < 16; ++m) {
      int k = 0;
      for (int b = 0; b < 4; ++b)
        if (m >> b & 1) {
          for (int i = 0; i < 4; ++i) ctrl[m][4 * k + i] = static_cast<uint8_t>(4 * b + i);
          ++k;
        }
      for (; k < 4; ++k)
        for (int i = 0; i < 4; ++i) ctrl[m][4 * k + i] = 0x80;
    }
  }
};
const PackTable kPack;

template <bool kCounted>
__attribute__((target("avx2"))) int64_t NonEmptyAvx2(const v2d* hist, const int32_t* rc, int64_t V,
                                                     int32_t* nz) {
  int64_t nnz = 0, j = 0;
  const __m256i zero = _mm256_setzero_si256();
  for (; j + 4 <= V; j += 4) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hist + j));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hist + j + 2));
    // (G | H) of slots j, j + 2, j + 1, j + 3; then in slot order
    __m256i o = _mm256_or_si256(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
    o = _mm256_permute4x64_epi64(_mm256_slli_epi64(o, 1), 0xD8);
    const int empty = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(o, zero)));
    int full = empty ^ 15;
    if (kCounted) {  // or a count other than 0
      const __m128i cv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rc + j));
      full |= _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(cv, _mm_setzero_si128()))) ^ 15;
    }
    const __m128i idx = _mm_add_epi32(_mm_set1_epi32(static_cast<int32_t>(j)),
                                      _mm_setr_epi32(0, 1, 2, 3));
    const __m128i ctrl = _mm_load_si128(reinterpret_cast<const __m128i*>(kPack.ctrl[full]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(nz + nnz), _mm_shuffle_epi8(idx, ctrl));
    nnz += __builtin_popcount(static_cast<unsigned>(full));
  }
  return NonEmptyScalar(hist, rc, j, V, nz, nnz);
}

const bool kHasAvx2 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
}();
#endif

inline int64_t NonEmpty(const v2d* hist, int64_t V, int32_t* nz, const int32_t* rc = nullptr) {
#if JB_X86_AVX2
  if (kHasAvx2)
    return rc != nullptr ? NonEmptyAvx2<true>(hist, rc, V, nz)
                         : NonEmptyAvx2<false>(hist, nullptr, V, nz);
#endif
  return NonEmptyScalar(hist, rc, 0, V, nz, 0);
}

// The first index of the largest of g[0 .. m - 1] (NaN never counts), or -1 when none
// is > -inf: as the loop "if (g[i] > best) take i", in four chains instead of one.
inline int64_t FirstMax(const float* g, int64_t m) {
  constexpr float lo = -std::numeric_limits<float>::infinity();
  float a0 = lo, a1 = lo, a2 = lo, a3 = lo;
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) {
    a0 = g[i] > a0 ? g[i] : a0;
    a1 = g[i + 1] > a1 ? g[i + 1] : a1;
    a2 = g[i + 2] > a2 ? g[i + 2] : a2;
    a3 = g[i + 3] > a3 ? g[i + 3] : a3;
  }
  for (; i < m; ++i) a0 = g[i] > a0 ? g[i] : a0;
  a0 = a1 > a0 ? a1 : a0;
  a2 = a3 > a2 ? a3 : a2;
  a0 = a2 > a0 ? a2 : a0;
  if (!(a0 > lo)) return -1;
  for (i = 0; g[i] != a0; ++i) {
  }
  return i;
}

// Best candidate of one (node, feature) from its n_bins (G, H) slots.
//
// Only the non-empty bins are walked: a candidate whose bin is empty has the sums of
// the candidate before it in its pass (adding zeros to a sum changes nothing but the
// sign of a zero, which no score sees), so it cannot beat it; the first candidate of
// each pass is always considered. Of those, a candidate is scored only when both
// children have H >= min_child_weight (compacted without branches, then scored in one
// loop); then the first strictly greater gain wins, in the pass's order.
//
// ScanFeatureNz takes the non-empty slots, nz[0 .. nnz - 1] ascending, as NonEmpty gives
// them (a caller that knows which slots can hold rows lists them without a pass over
// every slot).
//
// Row minimum: rc, when not null, is the node's row counts of the feature (as the
// histogram, int32 per bin), Cp the node's count and k the minimum; a candidate is then
// scored only when both children also hold >= k counted rows, and nz must list the
// bins holding counted rows too (a bin of rows whose g and h are all 0 changes the
// counts, not the sums).
inline Cand ScanFeatureNz(const v2d* hist, int64_t B, const int32_t* nz, int64_t nnz,
                          double Gp, double Hp, float sp, bool forward, const Hyp& p,
                          ScanBuf& s, const MonoNode* mn = nullptr,
                          const int32_t* rc = nullptr, int64_t Cp = 0, int64_t k = 0) {
  auto gains = [&](int64_t m) {
    if (mn != nullptr)
      GainsMono(s, m, sp, p, *mn);
    else
      Gains(s, m, sp, p);
  };
  Cand best{-std::numeric_limits<float>::infinity(), 0, false};
  const int64_t V = B - 1;
  const double mcw = p.mcw;
  // without a row minimum CL = CR = k = 0: the count test always passes
  auto push = [&](int64_t& m, double GL, double HL, double GR, double HR, int32_t t,
                  int64_t CL, int64_t CR) {
    s.GL[m] = GL;
    s.HL[m] = HL;
    s.GR[m] = GR;
    s.HR[m] = HR;
    s.t[m] = t;
    m += static_cast<int64_t>((HL >= mcw) & (HR >= mcw) & (CL >= k) & (CR >= k));
  };
  const int64_t C0 = rc != nullptr ? Cp : 0;
  if (forward) {  // pass A: thresholds ascending (left = bins < t), missing right
    double GL = 0.0, HL = 0.0;
    int64_t CL = 0;
    int64_t m = 0;
    if (nnz == 0 || nz[0] != 0) push(m, 0.0, 0.0, Gp, Hp, 1, 0, C0);  // bin 0 empty
    for (int64_t q = 0; q < nnz; ++q) {
      const int64_t j = nz[q];
      GL += hist[j][0];
      HL += hist[j][1];
      if (rc != nullptr) CL += rc[j];
      push(m, GL, HL, Gp - GL, Hp - HL, static_cast<int32_t>(j + 1), CL, C0 - CL);
    }
    gains(m);
    const int64_t i = FirstMax(s.gain, m);
    if (i >= 0) best = Cand{s.gain[i], s.t[i], false};
  }
  // pass B: thresholds descending (right = present bins >= t), missing left
  double GR = 0.0, HR = 0.0;
  int64_t CR = 0;
  int64_t m = 0;
  if (nnz == 0 || nz[nnz - 1] != V - 1)  // bin V - 1 empty
    push(m, Gp, Hp, 0.0, 0.0, static_cast<int32_t>(V - 1), C0, 0);
  for (int64_t q = nnz - 1; q >= 0; --q) {
    const int64_t t = nz[q];
    GR += hist[t][0];
    HR += hist[t][1];
    if (rc != nullptr) CR += rc[t];
    push(m, Gp - GR, Hp - HR, GR, HR, static_cast<int32_t>(t), C0 - CR, CR);
  }
  gains(m);
  const int64_t i = FirstMax(s.gain, m);
  if (i >= 0 && s.gain[i] > best.gain) best = Cand{s.gain[i], s.t[i], true};
  return best;
}

inline Cand ScanFeature(const v2d* hist, int64_t B, double Gp, double Hp, float sp,
                        bool forward, const Hyp& p, ScanBuf& s, const MonoNode* mn = nullptr,
                        const int32_t* rc = nullptr, int64_t Cp = 0, int64_t k = 0) {
  int32_t* const nz = s.nz;  // room for B + 4
  const int64_t nnz = NonEmpty(hist, B - 1, nz, rc);  // with rc: or counted rows
  return ScanFeatureNz(hist, B, nz, nnz, Gp, Hp, sp, forward, p, s, mn, rc, Cp, k);
}


// jaxboost.engine.sampling.uniform's number at flat index i of a draw keyed by key.
inline uint32_t Mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  return x ^ (x >> 16);
}
inline float UniformAt(const uint32_t* key, uint64_t i) {
  const uint32_t x = Mix(Mix(static_cast<uint32_t>(i) * 0x9E3779B9u ^ key[0]) + key[1]);
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}

// The features one node may split on (colsample_bynode): of the features its level
// allows, n of them, max(1, floor(ratio * n)) with the smallest numbers
// UniformAt(key, base + f) (ties: the lower feature), as
// jaxboost.engine.sampling.FeatureSampler draws for node k of level d at flat index
// base = (d W + k) F of its (max_depth, W, F) draw.
inline void NodeFeatures(const bool* allowed, int64_t F, const uint32_t* key, float ratio,
                         int64_t base, uint8_t* out, std::vector<std::pair<float, int32_t>>& order) {
  order.clear();
  int64_t n = 0;
  for (int64_t f = 0; f < F; ++f) {
    n += allowed[f];
    order.emplace_back(allowed[f] ? UniformAt(key, static_cast<uint64_t>(base + f)) : 2.0f,
                       static_cast<int32_t>(f));
  }
  const float prod = ratio * static_cast<float>(n);
  const int64_t k = std::min<int64_t>(F, std::max<int64_t>(1, static_cast<int64_t>(std::floor(prod))));
  // the k smallest (number, feature) pairs, all distinct, end up in front
  std::nth_element(order.begin(), order.begin() + (k - 1), order.end());
  std::memset(out, 0, static_cast<size_t>(F));
  for (int64_t i = 0; i < k; ++i) out[order[i].second] = 1;
}

// Categorical features (jaxboost.engine.categorical, the contract this follows in the
// same precision): a feature's category codes are its bins 0 .. C - 1; kind 1 splits
// one category from the rest (one-vs-rest), kind 2 a partition of the categories
// sorted by their Newton weight; S slots (CatInfo.codes, >= C) are the bins that can
// hold categories. A split node stores the codes going left as 256 bits (8 uint32
// words; codes of bins >= B take the missing-value bin's way), as pack_bits.
constexpr int64_t kCatWords = 8;

struct CatIn {
  const int32_t* kind;    // (F,): 0 numeric, 1 one-vs-rest, 2 partition
  const int32_t* n_cats;  // (F,): C, the categories (bins 0 .. C - 1)
  const bool* seen;       // (F, B): the codes present in training
  int32_t max_cat_threshold;
  int64_t S;              // slots, C <= S <= B - 1
};

// jaxboost.engine.split.calc_weight in float64, rounded to float32: the sort key.
inline float WeightKey(double G, double H, const Hyp& p) {
  const bool used = (H >= p.mcw) && (H > 0);
  double w = -ThresholdL1(G, p.alpha) / ((used && H + p.lam > 0) ? H + p.lam : 1.0);
  if (p.mds > 0) w = std::min(std::max(w, -p.mds), p.mds);
  return static_cast<float>(used ? w : 0.0);
}

// The slots 0 .. S - 1 of a partition feature in the order of their keys (ascending,
// stable; slots >= C and NaN keys last, as jnp.argsort(..., stable=True)).
inline void CatOrder(const v2d* hist, int64_t C, int64_t S, const Hyp& p, int32_t* order) {
  float key[256];
  for (int64_t c = 0; c < S; ++c) {
    key[c] = c < C ? WeightKey(hist[c][0], hist[c][1], p) : std::numeric_limits<float>::infinity();
    order[c] = static_cast<int32_t>(c);
  }
  std::stable_sort(order, order + S, [&](int32_t a, int32_t b) {
    const float x = key[a], y = key[b];
    if (std::isnan(x)) return false;
    return std::isnan(y) || x < y;
  });
}

// Best candidate of one (node, categorical feature), in the candidate order of
// _category_gains (j: its slot; one-vs-rest 2c and 2c + 1, partition k - 1 for the
// first k sorted categories right, V + k - 1 for the last k left). Row minimum: rc,
// Cp, k as in ScanFeatureNz; the counts of each side are formed as the sums are.
inline Cand ScanCategorical(const v2d* hist, int64_t B, double Gp, double Hp, float sp,
                            const Hyp& p, int32_t kind, int64_t C, int64_t S, int32_t mct,
                            const int32_t* rc = nullptr, int64_t Cp = 0, int64_t kmin = 0) {
  Cand best{-std::numeric_limits<float>::infinity(), 0, false, true};
  const int64_t V = B - 1;
  auto cnt = [&](int64_t c) -> int64_t { return rc != nullptr ? rc[c] : 0; };
  const int64_t C0 = rc != nullptr ? Cp : 0;
  auto consider = [&](double GL, double HL, double GR, double HR, int64_t CL, int64_t CR,
                      int64_t j, bool dl) {
    if (!((HL >= p.mcw) & (HR >= p.mcw) & (CL >= kmin) & (CR >= kmin))) return;
    const float g = (Score(GL, HL, p) + Score(GR, HR, p)) - sp;
    if (g > best.gain) best = Cand{g, static_cast<int32_t>(j), dl, true};
  };
  if (kind == 1) {
    double sG = 0.0, sH = 0.0;  // missing = parent - present, as XGBoost computes it
    int64_t sC = 0;
    for (int64_t c = 0; c < S; ++c) {
      sG += hist[c][0];
      sH += hist[c][1];
      sC += cnt(c);
    }
    const double Gm = Gp - sG, Hm = Hp - sH;
    const int64_t Cm = C0 - sC;
    for (int64_t c = 0; c < C; ++c) {
      const double Gc = hist[c][0], Hc = hist[c][1];
      const int64_t Cc = cnt(c);
      consider(Gp - Gc, Hp - Hc, Gc, Hc, C0 - Cc, Cc, 2 * c, true);
      consider((Gp - Gc) - Gm, (Hp - Hc) - Hm, Gc + Gm, Hc + Hm, (C0 - Cc) - Cm, Cc + Cm,
               2 * c + 1, false);
    }
    return best;
  }
  const int64_t m = std::min<int64_t>(mct, C);
  if (m < 2) return best;
  int32_t order[256];
  CatOrder(hist, C, S, p, order);
  double RG[256], RH[256], TG[256], TH[256];
  int64_t RC[256], TC[256];
  for (int64_t i = 0; i < S; ++i) {
    const v2d x = hist[order[i]];
    RG[i] = i == 0 ? x[0] : RG[i - 1] + x[0];
    RH[i] = i == 0 ? x[1] : RH[i - 1] + x[1];
    RC[i] = (i == 0 ? 0 : RC[i - 1]) + cnt(order[i]);
  }
  for (int64_t i = S - 1; i >= 0; --i) {
    const v2d x = hist[order[i]];
    TG[i] = i == S - 1 ? x[0] : TG[i + 1] + x[0];
    TH[i] = i == S - 1 ? x[1] : TH[i + 1] + x[1];
    TC[i] = (i == S - 1 ? 0 : TC[i + 1]) + cnt(order[i]);
  }
  for (int64_t k = 1; k < m; ++k)  // the first k right, missing left
    consider(Gp - RG[k - 1], Hp - RH[k - 1], RG[k - 1], RH[k - 1], C0 - RC[k - 1], RC[k - 1],
             k - 1, true);
  for (int64_t k = 1; k < m; ++k)  // the last k left, missing right
    consider(TG[C - k], TH[C - k], Gp - TG[C - k], Hp - TH[C - k], TC[C - k], C0 - TC[C - k],
             V + k - 1, false);
  return best;
}

// The bins 0 .. B - 1 a categorical candidate of feature f sends left (_decode): the
// codes its slot j names, codes not seen in training and the missing-value bin the
// candidate's default way.
inline void CatLeft(const v2d* hist, const CatIn& cat, int64_t f, int64_t B, const Hyp& p,
                    const Cand& b, uint8_t* left) {
  const int64_t V = B - 1, C = cat.n_cats[f], S = cat.S, j = b.tbin;
  if (cat.kind[f] == 1) {
    for (int64_t c = 0; c < S; ++c) left[c] = c != j / 2;
  } else {
    int32_t order[256];
    CatOrder(hist, C, S, p, order);
    const int64_t k = j < V ? j + 1 : C - (j - V + 1);  // ranks >= k go left
    for (int64_t r = 0; r < S; ++r) left[order[r]] = r >= k;
  }
  const bool* seen = cat.seen + f * B;
  for (int64_t c = 0; c < S; ++c)
    if (!seen[c]) left[c] = b.dl;
  for (int64_t c = S; c < B; ++c) left[c] = b.dl;
}

// What both tree kernels read besides their bins and g, h: sizes, the tree
// parameters (TreeHyper's six float32 numbers), the root's sums, forward_ok and column
// sampling by node (level_sets null: off).
struct TreeIn {
  int64_t N, F, B, D;  // D: the heap arrays' depth (M = 2**(D + 1) - 1 nodes)
  const float* hyper;
  const double* root;
  const bool* forward_ok;
  const bool* level_sets;
  const uint32_t* node_key;
  float node_ratio;
  int64_t max_leaves;  // > 0: leaf-wise selection (LossGuide)
  int64_t G = 0;       // levels grown, 1 <= G <= D (hyper[6] when given, else D)
  const struct CatIn* cat = nullptr;  // categorical features (null: every one numeric)
  // Interaction constraints (jaxboost.engine.constraints): n_sets > 0 sets of features,
  // sets[j * F + f] whether feature f is in set j. Below the root a node may split on
  // a feature already split on along its path, or one in a set holding that whole path.
  const bool* sets = nullptr;
  int64_t n_sets = 0;
  // Monotone constraints: each feature's sign (null: none); numeric features only.
  const int32_t* mono = nullptr;
  // Row minimum (min_samples_leaf): each row's count, 1 for the rows the tree is grown
  // on and 0 for the others (null: none), and the fewest counted rows a child may hold.
  const float* cnt = nullptr;
  int64_t min_leaf = 0;
};

// What both tree kernels write: heap arrays of M = 2**(D + 1) - 1 nodes, and each row's
// deepest node (pos; its leaf after PruneAndLeaves).
struct TreeOut {
  int32_t* feature;
  int32_t* tbin;
  bool* dleft;
  bool* is_split;
  float* gain;
  double* Gn;
  double* Hn;
  int32_t* pos;
  bool* is_cat = nullptr;     // (M,) with TreeIn::cat: the categorical splits
  uint32_t* bits = nullptr;   // (M, 8): each categorical split's codes going left
};

inline Hyp HypOf(const float* hyper) {
  Hyp p;
  p.lam = hyper[1];
  p.alpha = hyper[2];
  p.mcw = hyper[4];
  p.mds = hyper[5];
  p.lam32 = hyper[1];
  return p;
}

// The tree every kernel starts from: no split, the root's sums, every row at the root
// (also the answer for no rows or no features).
void ResetTree(const TreeIn& in, const TreeOut& o) {
  const int64_t M = (int64_t{2} << in.D) - 1;
  std::fill(o.feature, o.feature + M, 0);
  std::fill(o.tbin, o.tbin + M, 0);
  std::fill(o.dleft, o.dleft + M, false);
  std::fill(o.is_split, o.is_split + M, false);
  std::fill(o.gain, o.gain + M, 0.0f);
  std::fill(o.Gn, o.Gn + M, 0.0);
  std::fill(o.Hn, o.Hn + M, 0.0);
  o.Gn[0] = in.root[0];
  o.Hn[0] = in.root[1];
  std::fill(o.pos, o.pos + in.N, 0);
  if (o.is_cat != nullptr) {
    std::fill(o.is_cat, o.is_cat + M, false);
    std::fill(o.bits, o.bits + M * kCatWords, 0u);
  }
}

// A split undone (LossGuide, gamma pruning): the node's outputs are a leaf's.
inline void Unsplit(const TreeOut& o, int64_t i) {
  o.is_split[i] = false;
  o.feature[i] = 0;
  o.tbin[i] = 0;
  o.dleft[i] = false;
  o.gain[i] = 0.0f;
  if (o.is_cat != nullptr) {
    o.is_cat[i] = false;
    std::fill(o.bits + i * kCatWords, o.bits + (i + 1) * kCatWords, 0u);
  }
}

// Unsplit in a leaf-wise tree grown level by level (PruneLeafWise, LossGuide): the
// children's sums go back to 0 too, as in the slots the best-first kernel
// (GrowLeafWise) never creates; no row reaches them, and the stored values and covers
// are then the same whichever kernel grew the tree. (Gamma pruning keeps them, as
// engine.grow.prune_gamma does.)
inline void UnsplitLeafWise(const TreeOut& o, int64_t i) {
  Unsplit(o, i);
  for (int64_t child = 2 * i + 1; child <= 2 * i + 2; ++child) {
    o.Gn[child] = 0.0;
    o.Hn[child] = 0.0;
  }
}

// Leaf-wise trees' queue of nodes that may split: largest gain first, ties to the node
// allocated first (XGBoost's node ids: the children of each expanded node take the
// next two numbers). item: what the grower keeps for the node.
struct LeafEntry {
  float gain;
  int64_t alloc;
  int64_t item;
};
struct LeafOrder {
  bool operator()(const LeafEntry& a, const LeafEntry& b) const {
    return a.gain == b.gain ? a.alloc > b.alloc : a.gain < b.gain;
  }
};
using LeafQueue = std::priority_queue<LeafEntry, std::vector<LeafEntry>, LeafOrder>;

// Leaf-wise growth (XGBoost's grow_policy="lossguide") from the level-wise candidate
// tree: a node's best split depends only on its own rows, so the leaf-wise tree is a
// best-first walk over the candidates. From the root, the splittable node of largest
// gain is expanded, ties to the node allocated first (XGBoost's node ids: the children
// of each expanded node take the next two), until the tree has max_leaves leaves; every
// candidate split not expanded is undone. Runs before PruneAndLeaves (gamma, leaves).
// Used where GrowTree grows leaf-wise trees (several threads) and by the sparse kernel,
// both pruning each level (PruneLeafWise); GrowLeafWise grows the same trees best first
// on one thread.
// The best-first walk over the split nodes among heap nodes [0, Md) (Md = 2**(d+1) - 1:
// those of depth <= d): keep[i] = 1 for each node it expands.
void BestFirstKeep(const TreeOut& o, int64_t max_leaves, int64_t Md, std::vector<uint8_t>* keep) {
  keep->assign(Md, 0);
  LeafQueue queue;
  if (o.is_split[0]) queue.push(LeafEntry{o.gain[0], 0, 0});
  int64_t leaves = 1, next_alloc = 1;
  while (!queue.empty() && leaves < max_leaves) {
    const LeafEntry e = queue.top();
    queue.pop();
    (*keep)[e.item] = 1;
    ++leaves;
    for (int64_t c = 2 * e.item + 1; c <= 2 * e.item + 2; ++c) {
      const int64_t alloc = next_alloc++;
      if (c < Md && o.is_split[c]) queue.push(LeafEntry{o.gain[c], alloc, c});
    }
  }
}

void LossGuide(const TreeIn& in, const TreeOut& o) {
  if (in.max_leaves <= 0) return;
  const int64_t M = (int64_t{2} << in.D) - 1;
  std::vector<uint8_t> keep;
  BestFirstKeep(o, in.max_leaves, M, &keep);
  for (int64_t i = 0; i < M; ++i)
    if (o.is_split[i] && !keep[i]) UnsplitLeafWise(o, i);
}

// A leaf-wise tree grown level by level, after level d's splits: the nodes the walk over
// the whole tree can expand. That walk expands the nodes of depth <= d in the order the
// walk over those nodes alone does (deeper nodes only interleave: they neither make a
// shallower node available nor change the order of two of them, ties included, as
// allocation numbers keep their order), so it expands a prefix of what the shorter
// walk expands with the same leaf budget. A split node of depth d outside the shorter
// walk is never expanded: its split is undone now (and unsplit(i) called, for the
// caller to drop its children), so each level holds at most max_leaves - 1 splits.
template <typename OnUnsplit>
void PruneLeafWise(const TreeIn& in, const TreeOut& o, int64_t d, std::vector<uint8_t>* keep,
                   const OnUnsplit& unsplit) {
  if (in.max_leaves <= 0) return;
  const int64_t n = int64_t{1} << d;
  BestFirstKeep(o, in.max_leaves, 2 * n - 1, keep);
  for (int64_t i = n - 1; i < 2 * n - 1; ++i) {
    if (o.is_split[i] && !(*keep)[i]) {
      UnsplitLeafWise(o, i);
      unsplit(i);
    }
  }
}

// gamma post-pruning, bottom-up (jaxboost.engine.grow.prune_gamma): a split whose
// children are both leaves goes when its gain < gamma, then its parent is checked.
// Then each row's leaf: the shallowest ancestor of its deepest node pos[r] that does
// not split (jaxboost.engine.grow.leaf_of), written over pos.
void PruneAndLeaves(const TreeIn& in, const TreeOut& o) {
  const int64_t D = in.D, M = (int64_t{2} << D) - 1;
  const float gamma = in.hyper[3];
  for (int64_t d = D - 1; d >= 0; --d) {
    for (int64_t i = (int64_t{1} << d) - 1; i < (int64_t{2} << d) - 1; ++i) {
      if (o.is_split[i] && !o.is_split[2 * i + 1] && !o.is_split[2 * i + 2] &&
          o.gain[i] < gamma)
        Unsplit(o, i);
    }
  }
  std::vector<int32_t> rep(M);
  rep[0] = 0;
  for (int64_t i = 1; i < M; ++i) {
    const int64_t par = (i - 1) / 2;
    rep[i] = (rep[par] != par || !o.is_split[par]) ? rep[par] : static_cast<int32_t>(i);
  }
  for (int64_t r = 0; r < in.N; ++r) o.pos[r] = rep[o.pos[r]];
}

// hyper[6], when given (n == 7): the depth to grow, below the arrays' D (a program
// compiled for a bucket of depths grows each model's own); *G is D without it. False
// when hyper[6] is not an integer in [1, D].
bool GrownDepth(const float* hyper, size_t n, int64_t D, int64_t* G) {
  *G = D;
  if (n != 7) return true;
  const float d = hyper[6];
  if (!(d >= 1.0f && d <= static_cast<float>(D)) || d != static_cast<float>(static_cast<int64_t>(d)))
    return false;
  *G = static_cast<int64_t>(d);
  return true;
}

// Checks and reads what the tree handlers share, for T trees laid out one after another
// in every buffer but the shared forward_ok (T = 1: JaxboostGrowTree's and
// JaxboostGrowTreeSparse's one tree): ins[t] (a copy of base, whose N, F, B, D and
// max_leaves the caller set, with tree t's hyperparameters, depth and draws) and
// outs[t]. An error names the kernel; the shapes it gives are one tree's.
ffi::Error DecodeTrees(const char* name, int64_t T, ffi::AnyBuffer g, ffi::AnyBuffer h,
                       ffi::Buffer<ffi::F32> hyper, ffi::Buffer<ffi::F64> root,
                       ffi::Buffer<ffi::PRED> forward_ok, ffi::Buffer<ffi::PRED> level_sets,
                       ffi::Buffer<ffi::U32> node_key, ffi::Buffer<ffi::F32> node_ratio,
                       bool colsample, ffi::ResultBuffer<ffi::S32>& feature,
                       ffi::ResultBuffer<ffi::S32>& tbin, ffi::ResultBuffer<ffi::PRED>& dleft,
                       ffi::ResultBuffer<ffi::PRED>& is_split,
                       ffi::ResultBuffer<ffi::F32>& gain, ffi::ResultBuffer<ffi::F64>& Gn,
                       ffi::ResultBuffer<ffi::F64>& Hn, ffi::ResultBuffer<ffi::S32>& pos,
                       const TreeIn& base, std::vector<TreeIn>* ins,
                       std::vector<TreeOut>* outs) {
  const std::string k = name;
  const int64_t N = base.N, F = base.F, D = base.D, B = base.B;
  if (D < 1 || D > 20) return ffi::Error::InvalidArgument(k + ": max_depth in [1, 20]");
  if (B < 2 || B > kWideBins) return ffi::Error::InvalidArgument(k + ": n_bins in [2, 4096]");
  if (N >= (int64_t{1} << 31))
    return ffi::Error::InvalidArgument(k + ": more than 2^31 - 1 rows");
  const size_t t_ = static_cast<size_t>(T), M = (size_t{2} << D) - 1;
  if (feature->element_count() != t_ * M || tbin->element_count() != t_ * M ||
      dleft->element_count() != t_ * M || is_split->element_count() != t_ * M ||
      gain->element_count() != t_ * M || Gn->element_count() != t_ * M ||
      Hn->element_count() != t_ * M)
    return ffi::Error::InvalidArgument(k + ": tree outputs must be (2**(max_depth+1)-1,)");
  const size_t n = static_cast<size_t>(N);
  if (pos->element_count() != t_ * n || g.element_count() != t_ * n ||
      h.element_count() != t_ * n)
    return ffi::Error::InvalidArgument(k + ": g, h, pos must be (N,)");
  if (g.element_type() != h.element_type())
    return ffi::Error::InvalidArgument(k + ": g and h dtypes differ");
  const size_t P = T > 0 ? hyper.element_count() / t_ : 6;
  if ((P != 6 && P != 7) || hyper.element_count() != t_ * P ||
      root.element_count() != t_ * 2 || forward_ok.element_count() != static_cast<size_t>(F))
    return ffi::Error::InvalidArgument(k + ": hyper (6,) or (7,), root (2,), forward_ok (F,)");
  if (colsample) {
    const auto md = level_sets.dimensions();
    const size_t r = md.size();
    if (r < 2 || md[r - 2] != D || md[r - 1] != F ||
        level_sets.element_count() != t_ * static_cast<size_t>(D * F) ||
        node_key.element_count() != t_ * 2 || node_ratio.element_count() != t_)
      return ffi::Error::InvalidArgument(
          k + ": level_sets (max_depth, F), node_key (2,), node_ratio (1,)");
  }
  ins->assign(t_, base);
  outs->resize(t_);
  for (int64_t t = 0; t < T; ++t) {
    TreeIn& in = (*ins)[t];
    in.hyper = hyper.typed_data() + t * P;
    if (!GrownDepth(in.hyper, P, D, &in.G))
      return ffi::Error::InvalidArgument(k + ": hyper[6] (depth) must be an integer in [1, max_depth]");
    in.root = root.typed_data() + 2 * t;
    in.forward_ok = forward_ok.typed_data();
    in.level_sets = colsample ? level_sets.typed_data() + t * D * F : nullptr;
    in.node_key = colsample ? node_key.typed_data() + 2 * t : nullptr;
    in.node_ratio = colsample ? node_ratio.typed_data()[t] : 1.0f;
    (*outs)[t] = TreeOut{feature->typed_data() + t * M, tbin->typed_data() + t * M,
                         dleft->typed_data() + t * M,   is_split->typed_data() + t * M,
                         gain->typed_data() + t * M,    Gn->typed_data() + t * M,
                         Hn->typed_data() + t * M,      pos->typed_data() + t * N};
  }
  return ffi::Error::Success();
}

// fn(g, h) with g, h as typed pointers (float32 or float64); out of memory an error.
template <typename Fn>
ffi::Error WithRows(const char* name, ffi::AnyBuffer g, ffi::AnyBuffer h, Fn fn) {
  try {
    switch (g.element_type()) {
      case ffi::DataType::F32:
        return fn(static_cast<const float*>(g.untyped_data()),
                  static_cast<const float*>(h.untyped_data()));
      case ffi::DataType::F64:
        return fn(static_cast<const double*>(g.untyped_data()),
                  static_cast<const double*>(h.untyped_data()));
      default:
        return ffi::Error::InvalidArgument(std::string(name) +
                                           ": g, h must be float32 or float64");
    }
  } catch (const std::bad_alloc&) {
    return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                      std::string(name) + ": out of memory for histograms");
  }
}

// One unit of a tree kernel's split search: the best candidate of heap node i (sums
// Gi, Hi, counted rows Ci, score sp) on feature f from its histogram row hf (counts
// rc, or null), or none where no candidate can give both children H >=
// min_child_weight (with a margin for the rounding of H_parent - H_child) or >= kmin
// counted rows. tl: null, or the ascending bins (tc of them) that can hold the node's
// rows (GrowTree's few-row slots: every other bin counts as empty). mn: the node's
// monotone bounds and the feature's sign (null: none).
inline Cand ScanUnit(const v2d* hf, const int32_t* rc, int64_t f, int64_t B, double Gi,
                     double Hi, int64_t Ci, float sp, const Hyp& p, const CatIn* cat,
                     bool forward, ScanBuf& s, const MonoNode* mn, int64_t kmin,
                     const uint8_t* tl, int64_t tc) {
  const Cand none{-std::numeric_limits<float>::infinity(), 0, false};
  if (p.mcw > 0 && Hi < 2 * p.mcw * (1 - 1e-12)) return none;
  if (rc != nullptr && Ci < 2 * kmin) return none;
  if (cat != nullptr && cat->kind[f] != 0)
    return ScanCategorical(hf, B, Gi, Hi, sp, p, cat->kind[f], cat->n_cats[f], cat->S,
                           cat->max_cat_threshold, rc, Ci, kmin);
  if (tl != nullptr) {
    int32_t nz[256];
    int64_t nnz = 0;
    for (int64_t q = 0; q < tc && tl[q] < B - 1; ++q) {
      nz[nnz] = tl[q];
      nnz += SlotHolds(hf, rc, tl[q]);
    }
    return ScanFeatureNz(hf, B, nz, nnz, Gi, Hi, sp, forward, p, s, mn, rc, Ci, kmin);
  }
  return ScanFeature(hf, B, Gi, Hi, sp, forward, p, s, mn, rc, Ci, kmin);
}

// The row minimum's counts: each row's as an integer (1 where cnt is not 0) into
// rcount; returns their sum, the root's count.
inline int64_t RowCounts(const float* cnt, int64_t N, int32_t* rcount) {
  int64_t total = 0;
  for (int64_t r = 0; r < N; ++r) {
    rcount[r] = cnt[r] != 0.0f ? 1 : 0;
    total += rcount[r];
  }
  return total;
}

// scan(u0, u1) over the units [0, units) of a split search: in ranges on the threads
// when there are many bins to scan (units x B >= 2**16), else on this thread.
template <typename Scan>
inline void ScanUnits(ffi::ThreadPool* pool, int64_t nt, int64_t units, int64_t B,
                      const Scan& scan) {
  if (nt > 1 && units * B >= (int64_t{1} << 16)) {
    const int64_t n_ranges = std::min(units, nt * 8);
    ParallelFor(pool, nt, n_ranges, [&](int64_t r, int64_t) {
      scan(units * r / n_ranges, units * (r + 1) / n_ranges);
    });
  } else {
    scan(0, units);
  }
}

// A tree kernel's split of heap node i by candidate b on feature bf, recorded in o, and
// its children's sums (G, H and counted rows) written at 2i + 1 and 2i + 2: from the
// node's histogram row hr (counts hc, or null for none) over the bins tl lists (tc of
// them; tl null: all B), in bin order; with mono (each node's bounds lo, hi) the
// children's bounds (constraints.after_level: the midpoint bounds one side). Returns
// whether the left child is the smaller (H_left <= H_right).
inline bool RecordSplit(const TreeOut& o, const CatIn* cat, int64_t i, const Cand& b, int64_t bf,
                        const v2d* hr, const int32_t* hc, int64_t B, const Hyp& p,
                        const uint8_t* tl, int64_t tc, int64_t* Cn, const int32_t* mono,
                        float* lo, float* hi) {
  o.feature[i] = static_cast<int32_t>(bf);
  o.tbin[i] = b.cat ? 0 : b.tbin;
  o.dleft[i] = b.dl;
  o.is_split[i] = true;
  o.gain[i] = b.gain;
  uint8_t cat_left[kWideBins];  // CatLeft writes B entries
  if (b.cat) {  // the codes going left, as bits (pack_bits)
    CatLeft(hr, *cat, bf, B, p, b, cat_left);
    o.is_cat[i] = true;
    uint32_t* w = o.bits + i * kCatWords;
    for (int64_t code = 0; code < 32 * kCatWords; ++code)
      if (cat_left[code < B ? code : B - 1]) w[code >> 5] |= uint32_t{1} << (code & 31);
  }
  double GL = 0.0, HL = 0.0, GR = 0.0, HR = 0.0;
  int64_t CL = 0, CR = 0;
  auto add_bin = [&](int64_t j) {
    const bool left = b.cat ? cat_left[j] != 0 : (j == B - 1 ? b.dl : j < b.tbin);
    if (left) {
      GL += hr[j][0];
      HL += hr[j][1];
      if (hc != nullptr) CL += hc[j];
    } else {
      GR += hr[j][0];
      HR += hr[j][1];
      if (hc != nullptr) CR += hc[j];
    }
  };
  if (tl != nullptr) {
    for (int64_t q = 0; q < tc; ++q) add_bin(tl[q]);
  } else {
    for (int64_t j = 0; j < B; ++j) add_bin(j);
  }
  const int64_t li = 2 * i + 1, ri = 2 * i + 2;
  o.Gn[li] = GL;
  o.Hn[li] = HL;
  o.Gn[ri] = GR;
  o.Hn[ri] = HR;
  if (hc != nullptr) {
    Cn[li] = CL;
    Cn[ri] = CR;
  }
  if (mono != nullptr) ChildBounds(i, GL, HL, GR, HR, mono[bf], p, lo, hi);
  return HL <= HR;
}

// The rows rows[s0 .. s1) of a split node, stably into its children's, left then right
// (right: room for the right ones), each row's child (to_l, or to_l + 1) into pos;
// left(bin value) says which side. Returns the rows going left.
template <typename Left, typename Bn>
inline int32_t PartitionRows(int32_t* rows, int32_t* right, int32_t s0, int32_t s1,
                             const Bn* bins, int64_t F, int64_t f, int32_t* pos,
                             int32_t to_l, const Left& left_of) {
  int32_t nl = 0, nr = 0;
  for (int32_t q = s0; q < s1; ++q) {
    const int32_t r = rows[q];
    const bool left = left_of(bins[static_cast<int64_t>(r) * F + f]);
    pos[r] = to_l + !left;
    rows[s0 + nl] = r;  // nl <= q - s0: never past an unread row
    right[nr] = r;
    nl += left;
    nr += !left;
  }
  std::memcpy(rows + s0 + nl, right, sizeof(int32_t) * nr);
  return nl;
}

// GrowTree's rows go by segments below this many rows x features (or on one thread).
constexpr int64_t kPartitionWork = int64_t{1} << 22;

// Bn: the bins' type, uint8_t or uint16_t (features of more than 256 bins; no few-row
// lists).
template <int64_t FS, typename T, typename Bn>
ffi::Error GrowTree(const Bn* bins, const T* g, const T* h, const TreeIn& in,
                    const TreeOut& o, int64_t nt, ffi::ThreadPool* pool) {
  const int64_t N = in.N, F = in.F, B = in.B, D = in.G;  // levels grown (<= in.D)
  const bool* const forward_ok = in.forward_ok;
  const bool* const level_sets = in.level_sets;
  int32_t* const feature = o.feature;
  int32_t* const tbin = o.tbin;
  bool* const dleft = o.dleft;
  double* const Gn = o.Gn;
  double* const Hn = o.Hn;
  int32_t* const pos = o.pos;
  const Hyp p = HypOf(in.hyper);
  const CatIn* const cat = in.cat;
  ResetTree(in, o);
  const int64_t nt_rows = std::max<int64_t>(1, std::min(nt, N));
  // Rows by segments (part): each live node's rows are a segment of a row index,
  // partitioned stably into its children level by level, and histograms add a node's
  // own rows, in ascending order, with the features spread over the threads (every
  // (feature, bin) sum then adds the same rows in the same order whatever the thread
  // count: the same trees for any n_threads). Used on one thread and below
  // kPartitionWork rows x features; above it the threads take blocks of rows (the
  // threaded histogram kernel above), each level routing every row.
  // 100 rounds at depth 6, 2 threads, segments against blocks of rows: 60,000 x 28 395
  // against 504 ms, 300,000 x 10 826 against 933 ms, 400,000 x 20 1.48 against 1.58 s;
  // W1's 1,000,000 x 28 12.2 against 4.6 s (the gathers of scattered rows).
  const bool part = nt_rows == 1 || N * F < kPartitionWork;
  const int64_t nt_feat = part ? std::min<int64_t>(nt_rows, F) : 1;
  // The features of thread t of nt_feat: [F t / nt_feat, F (t + 1) / nt_feat).
  auto by_features = [&](const std::function<void(int64_t, int64_t)>& fn) {
    if (nt_feat <= 1) return fn(0, F);
    ParallelFor(pool, nt_feat, nt_feat,
                [&](int64_t t, int64_t) { fn(F * t / nt_feat, F * (t + 1) / nt_feat); });
  };
  // Work per split (pair of children) below the root: fn(pr) for each of n_pairs
  // pairs, the pairs spread over the threads when there are several. Each pair's
  // work is the same whichever thread does it. Splitting a node's rows by features
  // instead (by_features) gains little there: every thread walks the same scattered
  // rows, and those loads, not the additions, take the time (200,000 x 10 rows,
  // depth 6: two threads by features took 1.0x the time of one).
  auto by_pairs = [&](int64_t n_pairs, const std::function<void(int64_t)>& fn) {
    if (nt_feat <= 1 || n_pairs < 2) {
      for (int64_t pr = 0; pr < n_pairs; ++pr) fn(pr);
      return;
    }
    ParallelFor(pool, nt_feat, n_pairs, [&](int64_t pr, int64_t) { fn(pr); });
  };
  // Histograms of a level's live nodes, node-major in slots: live node c's (G, H) pair
  // of feature f, bin b at slot[c] * ns + f * FS + b (the stride of the histogram
  // kernel above, padded to an odd number of 64-byte lines per node). A split's larger
  // child takes its parent's slot (parent minus smaller child, in place) and the
  // smaller child a free one, so the slots in use are the live nodes of one level, not
  // of two (depth 12: a third less memory).
  int64_t ns = F * FS;
  if ((ns / 4) % 2 == 0) ns += 4;
  // Live nodes per level <= min(2**d, rows): a bound for the slots.
  // Leaf-wise trees (PruneLeafWise): at most max_leaves - 1 splits a level, so at most
  // 2 (max_leaves - 1) live nodes.
  const int64_t max_live = std::min<int64_t>(
      {int64_t{1} << (D - 1), std::max<int64_t>(N, 1),
       in.max_leaves > 0 ? std::max<int64_t>(2 * (in.max_leaves - 1), 1) : int64_t{1} << 62});
  Scratch<v2d> levels(max_live * ns + kTail<Bn>);
  v2d* const base = levels.get();
  v2d* const cur = base;  // the root's slot, 0
  std::vector<int32_t> slot{0};  // each live node's slot
  // Row minimum: every slot's row counts (int32, at the histogram's indices), each
  // heap node's count, each row's count as an integer; histogrammed, subtracted and
  // summed exactly as the (G, H) pairs (integers: exact in any order).
  const bool counted = in.cnt != nullptr;
  const int64_t kmin = counted ? in.min_leaf : 0;
  Scratch<int32_t> clevels(counted ? max_live * ns + kTail<Bn> : 0), rcount(counted ? N : 0);
  int32_t* const cbase = clevels.get();
  std::vector<int64_t> Cn(counted ? (int64_t{2} << in.D) - 1 : 0, 0);
  if (counted) Cn[0] = RowCounts(in.cnt, N, rcount.get());
  // The threaded kernel's (F, nodes, B) histograms of n_nodes nodes (node_of: each
  // row's) into the slots at: (G, H), and with the row minimum the rows' counts, summed
  // in the same pass over the rows.
  Scratch<double> SG, SH;
  Scratch<int32_t> SC;
  auto dispatch = [&](const int32_t* node_of, int64_t n_nodes, const int32_t* at) {
    SG.reset(n_nodes * F * B);
    SH.reset(n_nodes * F * B);
    SC.reset(counted ? n_nodes * F * B : 0);
    Dispatch<T>(bins, g, h, node_of, N, F, n_nodes, n_nodes, B, nt, pool, SG.get(), SH.get(),
                counted ? rcount.get() : nullptr, SC.get());
    for (int64_t pr = 0; pr < n_nodes; ++pr) {
      v2d* o = base + at[pr] * ns;
      int32_t* oc = counted ? cbase + at[pr] * ns : nullptr;
      for (int64_t f = 0; f < F; ++f) {
        const int64_t k = (f * n_nodes + pr) * B;
        for (int64_t b = 0; b < B; ++b) o[f * FS + b] = v2d{SG[k + b], SH[k + b]};
        if (counted)
          for (int64_t b = 0; b < B; ++b) oc[f * FS + b] = SC[k + b];
      }
    }
  };
  // The root's histogram: every row, straight into node 0.
  std::memset(static_cast<void*>(cur), 0, sizeof(v2d) * ns);
  if (counted) std::memset(static_cast<void*>(cbase), 0, sizeof(int32_t) * ns);
  Scratch<int32_t> small_node(part ? 0 : N);  // the threaded kernel's node of each row
  if (part) {
    by_features([&](int64_t f0, int64_t f1) {
      for (int64_t r = 0; r < N; ++r) {
        const v2d v = {static_cast<double>(g[r]), static_cast<double>(h[r])};
        if (counted)
          AddRowCount<FS>(cur + f0 * FS, cbase + f0 * FS, bins + r * F + f0, f1 - f0, v, rcount[r]);
        else
          AddRow<FS>(cur + f0 * FS, bins + r * F + f0, f1 - f0, v);
      }
    });
  } else {
    const int32_t at0 = 0;  // every row (pos: 0), into the root's slot
    dispatch(pos, 1, &at0);
  }

  // part: the rows of each live node, a segment [seg, seg_end) of idx.
  Scratch<int32_t> idx, tmp;
  std::vector<int32_t> seg{0}, seg_end{static_cast<int32_t>(N)}, next_seg, next_seg_end;
  if (part) {
    idx.reset(N);
    tmp.reset(N);
    for (int64_t r = 0; r < N; ++r) idx[r] = static_cast<int32_t>(r);
  }
  // Few-row slots (part, numeric features): a smaller child of at most S rows keeps,
  // for each feature, the ascending list of bins its rows fall in; only those bins of
  // its histogram are written (zeroed, then its rows added in the usual order), the
  // rest of the slot is left as it was and counts as +0. Its larger sibling subtracts
  // only those bins (x - +0 is x, bit for bit), its scan walks only the listed bins
  // that are not empty (every bin outside the list is +0: empty), and its split's
  // children sums add only them (adding +0 to a sum that starts at +0 changes nothing).
  // A larger child keeps its parent's slot and lists: its rows are among the parent's,
  // so every bin it can hold, residues of the subtraction included, is listed. Each
  // node of a few-row slot has at most S rows, so its smaller child is one as well.
  // Deep levels of small data then cost their rows, not F x B per node (the memset,
  // the subtraction and the scan's pass over empty bins).
  // (uint8 bins only: the lists hold bin values as bytes)
  const int64_t S =
      (part && cat == nullptr && sizeof(Bn) == 1) ? std::min<int64_t>(64, (B - 1) / 4) : 0;
  std::vector<uint8_t> few(max_live, 0);  // per slot: a few-row slot
  Scratch<uint8_t> tlist(S > 0 ? max_live * F * S : 0), tcount(S > 0 ? max_live * F : 0);
  auto listed = [&](int64_t sl, int64_t f) { return tlist.get() + (sl * F + f) * S; };
  std::vector<uint8_t> small_few;
  std::vector<int32_t> live{0};  // the level's live nodes (index within the level)
  std::vector<int32_t> next_slot, small_at;
  std::vector<uint8_t> taken;
  std::vector<Cand> best;
  std::vector<float> sp;
  std::vector<int32_t> split_of, next_live, parent_c;
  std::vector<uint8_t> left_small;
  std::vector<uint8_t> node_mask;
  std::vector<std::pair<float, int32_t>> order;
  std::vector<uint8_t> lg_keep;
  const int64_t W = int64_t{1} << (D - 1);
  // Interaction constraints: per live node the features on its path (used, F) and the
  // sets that hold the whole path (rel, n_sets), as engine.constraints keeps them.
  const int64_t C = in.n_sets;
  std::vector<uint8_t> used(C > 0 ? F : 0, 0), rel(C, 1), next_used, next_rel;
  // Monotone constraints: every heap node's bounds (constraints.TreeConstraints.init).
  const int32_t* const mono = in.mono;
  const int64_t M = (int64_t{2} << in.D) - 1;
  const float kBig = std::numeric_limits<float>::max();
  std::vector<float> lo(mono != nullptr ? M : 0, -kBig), hi(mono != nullptr ? M : 0, kBig);
  for (int64_t d = 0; d < D; ++d) {
    const int64_t n = int64_t{1} << d;  // the level's nodes start at heap n - 1
    const int64_t nl = static_cast<int64_t>(live.size());
    const bool masked = level_sets != nullptr || (C > 0 && d > 0);
    // Split search: units (live node, feature), each its best candidate.
    best.assign(nl * F, Cand{-std::numeric_limits<float>::infinity(), 0, false});
    sp.resize(nl);
    for (int64_t c = 0; c < nl; ++c) {
      const int64_t i = n - 1 + live[c];
      sp[c] = mono != nullptr ? BoundedNodeScore(Gn[i], Hn[i], i, p, lo.data(), hi.data())
                              : Score(Gn[i], Hn[i], p);
    }
    if (masked) {  // column sampling, then the interaction sets
      node_mask.assign(nl * F, 1);
      if (level_sets != nullptr)
        for (int64_t c = 0; c < nl; ++c)
          NodeFeatures(level_sets + d * F, F, in.node_key, in.node_ratio,
                       (d * W + live[c]) * F, node_mask.data() + c * F, order);
      if (C > 0 && d > 0)
        for (int64_t c = 0; c < nl; ++c)
          for (int64_t f = 0; f < F; ++f) {
            bool ok = used[c * F + f] != 0;
            for (int64_t j = 0; j < C && !ok; ++j) ok = rel[c * C + j] && in.sets[j * F + f];
            node_mask[c * F + f] &= static_cast<uint8_t>(ok);
          }
    }
    auto scan = [&](int64_t u0, int64_t u1) {
      ScanStore<256> store;
      std::unique_ptr<ScanStore<kWideBins>> wide_store;  // uint16 bins
      ScanBuf s = ScanBufFor(B, &store, &wide_store);
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t c = u / F, f = u % F;
        const int64_t k = live[c], i = n - 1 + k;
        if (masked && !node_mask[c * F + f]) continue;
        const v2d* hf = base + slot[c] * ns + f * FS;
        const int32_t* rc = counted ? cbase + slot[c] * ns + f * FS : nullptr;
        MonoNode mnode{0.0f, 0.0f, 0};
        if (mono != nullptr) mnode = MonoNode{lo[i], hi[i], mono[f]};
        const bool fw = few[slot[c]] != 0;  // (numeric data only: S is 0 with categories)
        best[u] = ScanUnit(hf, rc, f, B, Gn[i], Hn[i], counted ? Cn[i] : 0, sp[c], p, cat,
                           forward_ok[f], s, mono != nullptr ? &mnode : nullptr, kmin,
                           fw ? listed(slot[c], f) : nullptr, fw ? tcount[slot[c] * F + f] : 0);
      }
    };
    ScanUnits(pool, nt, nl * F, B, scan);
    // Decide, record, children's sums. split_of[k]: the pair index of level node k's
    // children in the next level (-1: k does not split).
    split_of.assign(n, -1);
    next_live.clear();
    parent_c.clear();
    left_small.clear();
    for (int64_t c = 0; c < nl; ++c) {
      Cand b{-std::numeric_limits<float>::infinity(), 0, false};
      int64_t bf = 0;
      for (int64_t f = 0; f < F; ++f) {
        if (best[c * F + f].gain > b.gain) {
          b = best[c * F + f];
          bf = f;
        }
      }
      if (!(b.gain > kMinSplitGain)) continue;
      const int64_t k = live[c], i = n - 1 + k;
      const v2d* hr = base + slot[c] * ns + bf * FS;
      const int32_t* hc = counted ? cbase + slot[c] * ns + bf * FS : nullptr;
      const bool fw = few[slot[c]] != 0;
      const bool small_left = RecordSplit(o, cat, i, b, bf, hr, hc, B, p, fw ? listed(slot[c], bf) : nullptr,
                                          fw ? tcount[slot[c] * F + bf] : 0, Cn.data(), mono, lo.data(),
                                          hi.data());
      split_of[k] = static_cast<int32_t>(parent_c.size());
      parent_c.push_back(static_cast<int32_t>(c));
      left_small.push_back(small_left);
      next_live.push_back(static_cast<int32_t>(2 * k));
      next_live.push_back(static_cast<int32_t>(2 * k + 1));
    }
    if (in.max_leaves > 0) {  // leaf-wise: only the splits the best-first walk can expand
      PruneLeafWise(in, o, d, &lg_keep, [&](int64_t i) { split_of[i - (n - 1)] = -2; });
      size_t w = 0;
      for (size_t pr = 0; pr < parent_c.size(); ++pr) {
        const int64_t k = live[parent_c[pr]];
        if (split_of[k] == -2) {
          split_of[k] = -1;
          continue;
        }
        split_of[k] = static_cast<int32_t>(w);
        parent_c[w] = parent_c[pr];
        left_small[w] = left_small[pr];
        next_live[2 * w] = next_live[2 * pr];
        next_live[2 * w + 1] = next_live[2 * pr + 1];
        ++w;
      }
      parent_c.resize(w);
      left_small.resize(w);
      next_live.resize(2 * w);
    }
    const int64_t n_pairs = static_cast<int64_t>(parent_c.size());
    if (n_pairs == 0) break;
    if (C > 0) {  // the children's paths: the parent's and its split feature
      next_used.resize(2 * n_pairs * F);
      next_rel.resize(2 * n_pairs * C);
      for (int64_t pr = 0; pr < n_pairs; ++pr) {
        const int64_t c = parent_c[pr], f = feature[n - 1 + live[c]];
        for (int64_t side = 0; side < 2; ++side) {
          uint8_t* u = next_used.data() + (2 * pr + side) * F;
          uint8_t* r = next_rel.data() + (2 * pr + side) * C;
          if (d == 0) {
            std::memset(u, 0, static_cast<size_t>(F));
            std::memset(r, 1, static_cast<size_t>(C));
          } else {
            std::memcpy(u, used.data() + c * F, static_cast<size_t>(F));
            std::memcpy(r, rel.data() + c * C, static_cast<size_t>(C));
          }
          u[f] = 1;
          for (int64_t j = 0; j < C; ++j) r[j] = r[j] && in.sets[j * F + f];
        }
      }
      used.swap(next_used);
      rel.swap(next_rel);
    }
    const bool last = d + 1 == D;
    // a categorical split: codes 0 .. 255 in its bits; a bin past them (uint16 bins: the
    // missing-value bin) goes the default way, as CatLeft sends it
    auto goes_left = [&](int64_t i, Bn bv) {
      if (cat != nullptr && o.is_cat[i])
        return bv < 32 * kCatWords ? ((o.bits[i * kCatWords + (bv >> 5)] >> (bv & 31)) & 1u) != 0
                                   : static_cast<bool>(dleft[i]);
      return bv == B - 1 ? static_cast<bool>(dleft[i]) : bv < tbin[i];
    };
    if (part) {
      // Each split node's rows (its segment of rows, ascending) are partitioned
      // stably into its children's, left then right; rows of nodes that do not split
      // are not visited again. A child's rows stay ascending, so its histogram below
      // adds them in the order of a pass over every row.
      next_seg.resize(2 * n_pairs);
      next_seg_end.resize(2 * n_pairs);
      // One pair's partition; pairs on threads when several (the root's on one).
      auto partition = [&](int64_t pr) {
        // goes_left of the split node for each bin value (uint8 bins: all 256; uint16
        // bins: the B bins, a value past them read as the last)
        uint8_t to_left8[256];
        std::vector<uint8_t> to_left16;
        const int64_t c = parent_c[pr], i = n - 1 + live[c];
        const int32_t s0 = seg[c], s1 = seg_end[c];
        const int64_t f = feature[i];
        int32_t* const rows = idx.get();
        int32_t* const right = tmp.get() + s0;  // the segment's own part of tmp
        // Many rows: the node's rule as a table (the rule itself reloads tbin[i],
        // dleft[i] and the category bits for every row: stores to pos may alias them).
        const bool table = s1 - s0 >= (sizeof(Bn) == 1 ? 256 : B);
        uint8_t* to_left = to_left8;
        if (table) {
          if constexpr (sizeof(Bn) == 1) {
            for (int v = 0; v < 256; ++v) to_left[v] = goes_left(i, static_cast<Bn>(v));
          } else {
            to_left16.resize(B);
            to_left = to_left16.data();
            for (int64_t v = 0; v < B; ++v) to_left[v] = goes_left(i, static_cast<Bn>(v));
          }
        }
        auto left_of = [&](Bn bv) {
          if constexpr (sizeof(Bn) == 1) {
            return table ? to_left[bv] != 0 : goes_left(i, bv);
          } else {
            return table ? to_left[bv < B ? bv : B - 1] != 0 : goes_left(i, bv);
          }
        };
        const int32_t to_l = static_cast<int32_t>(2 * i + 1);
        if (last) {  // the rows' leaves only: no level below reads the segments
          for (int32_t q = s0; q < s1; ++q) {
            const int32_t r = rows[q];
            pos[r] = to_l + !left_of(bins[static_cast<int64_t>(r) * F + f]);
          }
          return;
        }
        const int32_t nl = PartitionRows(rows, right, s0, s1, bins, F, f, pos, to_l, left_of);
        next_seg[2 * pr] = s0;
        next_seg[2 * pr + 1] = s0 + nl;
        next_seg_end[2 * pr] = s0 + nl;
        next_seg_end[2 * pr + 1] = s1;
      };
      by_pairs(n_pairs, partition);
    }
    // Route the level's rows of split nodes; note which rows are in the smaller child
    // (by pair index: the threaded kernel's node).
    auto route = [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t k = static_cast<int64_t>(pos[r]) - (n - 1);
        int32_t sn = static_cast<int32_t>(n_pairs);  // skipped
        if (k >= 0 && k < n) {
          const int32_t pr = split_of[k];
          if (pr >= 0) {
            const int64_t i = n - 1 + k;
            const bool left = goes_left(i, bins[r * F + feature[i]]);
            pos[r] = static_cast<int32_t>(2 * i + (left ? 1 : 2));
            if (left == static_cast<bool>(left_small[pr])) sn = pr;
          }
        }
        small_node[r] = sn;
      }
    };
    if (!part && N >= (int64_t{1} << 16)) {
      ParallelFor(pool, nt_rows, nt_rows, [&](int64_t t, int64_t) {
        route(N * t / nt_rows, N * (t + 1) / nt_rows);
      });
    } else if (!part) {
      route(0, N);
    }
    if (last) break;
    // Slots: each split's parent slot goes to its larger child; each smaller child
    // takes the lowest free slot (the slots of the parents that did not split are
    // free again).
    taken.assign(max_live, 0);
    for (int64_t pr = 0; pr < n_pairs; ++pr) taken[slot[parent_c[pr]]] = 1;
    small_at.resize(n_pairs);
    int64_t free_slot = 0;
    for (int64_t pr = 0; pr < n_pairs; ++pr) {
      while (taken[free_slot]) ++free_slot;
      taken[free_slot] = 1;
      small_at[pr] = static_cast<int32_t>(free_slot);
    }
    // The next level's histograms: the smaller children's, then their siblings'
    // (parent minus smaller child, in the parent's slot).
    if (part) {
      small_few.resize(n_pairs);
      for (int64_t pr = 0; pr < n_pairs; ++pr) {
        const int64_t ch = 2 * pr + (left_small[pr] ? 0 : 1);  // the smaller child
        small_few[pr] = S > 0 && next_seg_end[ch] - next_seg[ch] <= S;
        few[small_at[pr]] = small_few[pr];
        if (!small_few[pr]) {
          std::memset(static_cast<void*>(base + small_at[pr] * ns), 0, sizeof(v2d) * ns);
          if (counted)
            std::memset(static_cast<void*>(cbase + small_at[pr] * ns), 0, sizeof(int32_t) * ns);
        }
      }
      // The smaller child of pair pr, features f0 .. f1 - 1.
      auto child_histogram = [&](int64_t pr, int64_t f0, int64_t f1) {
        {
          v2d* const out = base + small_at[pr] * ns + f0 * FS;
          const int64_t ch = 2 * pr + (left_small[pr] ? 0 : 1);  // the smaller child
          const int32_t* const rows = idx.get();
          if (sizeof(Bn) == 1 && small_few[pr]) {  // each feature's bins of these rows,
            // ascending; zeroed
            for (int64_t f = f0; f < f1; ++f) {
              uint64_t set[4] = {0, 0, 0, 0};
              for (int32_t q = next_seg[ch]; q < next_seg_end[ch]; ++q) {
                const uint8_t bv = bins[static_cast<int64_t>(rows[q]) * F + f];
                set[bv >> 6] |= uint64_t{1} << (bv & 63);
              }
              uint8_t* const tl = listed(small_at[pr], f);
              v2d* const of = out + (f - f0) * FS;
              int64_t tc = 0;
              for (int w = 0; w < 4; ++w)
                for (uint64_t x = set[w]; x != 0; x &= x - 1) {
                  const int64_t bv = 64 * w + __builtin_ctzll(x);
                  tl[tc++] = static_cast<uint8_t>(bv);
                  of[bv] = v2d{0.0, 0.0};
                  if (counted) cbase[small_at[pr] * ns + f * FS + bv] = 0;
                }
              tcount[small_at[pr] * F + f] = static_cast<uint8_t>(tc);
            }
          }
          int32_t* const cout = counted ? cbase + small_at[pr] * ns + f0 * FS : nullptr;
          for (int32_t q = next_seg[ch]; q < next_seg_end[ch]; ++q) {
            const int64_t r = rows[q];
            const v2d v = {static_cast<double>(g[r]), static_cast<double>(h[r])};
            if (counted)
              AddRowCount<FS>(out, cout, bins + r * F + f0, f1 - f0, v, rcount[r]);
            else
              AddRow<FS>(out, bins + r * F + f0, f1 - f0, v);
          }
        }
      };
      if (n_pairs >= 2) {  // pairs on threads
        by_pairs(n_pairs, [&](int64_t pr) { child_histogram(pr, 0, F); });
      } else {  // one pair: its features on threads
        by_features([&](int64_t f0, int64_t f1) { child_histogram(0, f0, f1); });
      }
    } else {
      dispatch(small_node.get(), n_pairs, small_at.data());
    }
    next_slot.resize(2 * n_pairs);
    by_features([&](int64_t f0, int64_t f1) {
      for (int64_t pr = 0; pr < n_pairs; ++pr) {
        v2d* lg = base + static_cast<int64_t>(slot[parent_c[pr]]) * ns;  // parent -> larger
        const v2d* sm = base + static_cast<int64_t>(small_at[pr]) * ns;
        int32_t* lc = counted ? cbase + static_cast<int64_t>(slot[parent_c[pr]]) * ns : nullptr;
        const int32_t* sc = counted ? cbase + static_cast<int64_t>(small_at[pr]) * ns : nullptr;
        if (part && small_few[pr]) {  // only the smaller child's bins (the rest is +0)
          for (int64_t f = f0; f < f1; ++f) {
            const uint8_t* const tl = listed(small_at[pr], f);
            const int64_t tc = tcount[small_at[pr] * F + f];
            for (int64_t q = 0; q < tc; ++q) {
              const int64_t b = f * FS + tl[q];
              lg[b] = lg[b] - sm[b];
              if (counted) lc[b] -= sc[b];
            }
          }
          continue;
        }
        for (int64_t f = f0; f < f1; ++f)
          for (int64_t b = 0; b < B; ++b) lg[f * FS + b] = lg[f * FS + b] - sm[f * FS + b];
        if (counted)
          for (int64_t f = f0; f < f1; ++f)
            for (int64_t b = 0; b < B; ++b) lc[f * FS + b] -= sc[f * FS + b];
      }
    });
    for (int64_t pr = 0; pr < n_pairs; ++pr) {
      const int32_t ps = slot[parent_c[pr]];
      // next_live lists each pair's children left then right
      next_slot[2 * pr] = left_small[pr] ? small_at[pr] : ps;
      next_slot[2 * pr + 1] = left_small[pr] ? ps : small_at[pr];
    }
    slot.swap(next_slot);
    live.swap(next_live);
    seg.swap(next_seg);
    seg_end.swap(next_seg_end);
  }
  LossGuide(in, o);
  PruneAndLeaves(in, o);
  return ffi::Error::Success();
}

// Leaf-wise growth (grow_policy="lossguide", max_leaves > 0), best first: from the
// root, the splittable leaf of largest gain is split, ties to the node allocated first
// (XGBoost's node ids: the children of each split node take the next two), until the
// tree has max_leaves leaves or no leaf can split. Only the split nodes' children are
// histogrammed and scanned, so a tree costs its max_leaves - 1 splits, not the
// level-wise tree of max_depth levels (LossGuide's selection from that tree gives the
// same tree: a node's best split depends only on its own rows and its path). One
// thread; rows by segments as GrowTree's (each (feature, bin) sum adds a node's rows in
// ascending order: GrowTree's trees bit for bit). Leaves that may still split hold a
// slot of histograms: at most min(max_leaves, 2**(max_depth - 1)) + 1 slots.
// 100,000 x 20, 31 leaves, 100 rounds, one thread, max_depth 12: 0.46 s a fit against
// 0.56 s for GrowTree with PruneLeafWise; GrowTreeDispatch says where each grows them.
template <int64_t FS, typename T>
ffi::Error GrowLeafWise(const uint8_t* bins, const T* g, const T* h, const TreeIn& in,
                        const TreeOut& o) {
  const int64_t N = in.N, F = in.F, B = in.B, D = in.G;  // levels grown (<= in.D)
  const bool* const forward_ok = in.forward_ok;
  const bool* const level_sets = in.level_sets;
  const Hyp p = HypOf(in.hyper);
  const CatIn* const cat = in.cat;
  ResetTree(in, o);
  int64_t ns = F * FS;  // a slot: GrowTree's layout
  if ((ns / 4) % 2 == 0) ns += 4;
  const int64_t n_slots = std::min<int64_t>(in.max_leaves, int64_t{1} << (D - 1)) + 1;
  Scratch<v2d> levels(n_slots * ns + 256);
  v2d* const base = levels.get();
  std::vector<int32_t> free_slots;  // a stack: the slot freed last is taken first
  for (int64_t s = n_slots - 1; s >= 1; --s) free_slots.push_back(static_cast<int32_t>(s));
  const bool counted = in.cnt != nullptr;
  const int64_t kmin = counted ? in.min_leaf : 0;
  Scratch<int32_t> clevels(counted ? n_slots * ns + 256 : 0), rcount(counted ? N : 0);
  int32_t* const cbase = clevels.get();
  const int64_t M = (int64_t{2} << in.D) - 1;
  std::vector<int64_t> Cn(counted ? M : 0, 0);
  if (counted) Cn[0] = RowCounts(in.cnt, N, rcount.get());
  Scratch<int32_t> idx(N), tmp(N);
  for (int64_t r = 0; r < N; ++r) idx[r] = static_cast<int32_t>(r);
  // Histogram of the rows idx[q0 .. q1) into a zeroed slot (out, cout), in order.
  auto histogram = [&](int32_t q0, int32_t q1, v2d* out, int32_t* cout) {
    const int32_t* const rows = idx.get();
    for (int32_t q = q0; q < q1; ++q) {
      const int64_t r = rows[q];
      const v2d v = {static_cast<double>(g[r]), static_cast<double>(h[r])};
      if (counted)
        AddRowCount<FS>(out, cout, bins + r * F, F, v, rcount[r]);
      else
        AddRow<FS>(out, bins + r * F, F, v);
    }
  };
  // The root's histogram (slot 0).
  std::memset(static_cast<void*>(base), 0, sizeof(v2d) * ns);
  if (counted) std::memset(static_cast<void*>(cbase), 0, sizeof(int32_t) * ns);
  histogram(0, static_cast<int32_t>(N), base, cbase);
  // Interaction constraints: per slot the features on the node's path (F) and the sets
  // that hold the whole path (C).
  const int64_t C = in.n_sets;
  std::vector<uint8_t> used(C > 0 ? n_slots * F : 0, 0), rel(n_slots * C, 1);
  const int32_t* const mono = in.mono;
  const float kBig = std::numeric_limits<float>::max();
  std::vector<float> lo(mono != nullptr ? M : 0, -kBig), hi(mono != nullptr ? M : 0, kBig);
  const int64_t W = int64_t{1} << (D - 1);
  // A leaf that may split: heap node i, its slot, its rows [s0, s1) of idx, its best
  // split (feature bf) and its allocation number.
  struct Leaf {
    int64_t i;
    int32_t slot, s0, s1;
    Cand best;
    int64_t bf, alloc;
  };
  auto depth_of = [](int64_t i) { return 63 - __builtin_clzll(static_cast<uint64_t>(i + 1)); };
  // Best splits of k nodes (heap i[j], slot sl[j]) into cand[j], bf[j]: GrowTree's scan.
  std::vector<Cand> best;
  std::vector<uint8_t> node_mask;
  std::vector<std::pair<float, int32_t>> order;
  auto find_splits = [&](int64_t k, const int64_t* i, const int32_t* sl, Cand* cand, int64_t* bf) {
    float sp[2];
    bool masked[2];
    best.assign(k * F, Cand{-std::numeric_limits<float>::infinity(), 0, false});
    node_mask.assign(k * F, 1);
    for (int64_t c = 0; c < k; ++c) {
      const int64_t d = depth_of(i[c]);
      sp[c] = mono != nullptr ? BoundedNodeScore(o.Gn[i[c]], o.Hn[i[c]], i[c], p, lo.data(), hi.data())
                              : Score(o.Gn[i[c]], o.Hn[i[c]], p);
      masked[c] = level_sets != nullptr || (C > 0 && d > 0);
      uint8_t* const nm = node_mask.data() + c * F;
      if (level_sets != nullptr)
        NodeFeatures(level_sets + d * F, F, in.node_key, in.node_ratio,
                     (d * W + i[c] - ((int64_t{1} << d) - 1)) * F, nm, order);
      if (C > 0 && d > 0)
        for (int64_t f = 0; f < F; ++f) {
          bool ok = used[sl[c] * F + f] != 0;
          for (int64_t j = 0; j < C && !ok; ++j) ok = rel[sl[c] * C + j] && in.sets[j * F + f];
          nm[f] &= static_cast<uint8_t>(ok);
        }
    }
    auto scan = [&](int64_t u0, int64_t u1) {
      ScanStore<256> store;  // uint8 bins
      ScanBuf s = store.view();
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t c = u / F, f = u % F, n = i[c];
        if (masked[c] && !node_mask[c * F + f]) continue;
        MonoNode mnode{0.0f, 0.0f, 0};
        if (mono != nullptr) mnode = MonoNode{lo[n], hi[n], mono[f]};
        best[u] = ScanUnit(base + sl[c] * ns + f * FS, counted ? cbase + sl[c] * ns + f * FS : nullptr,
                           f, B, o.Gn[n], o.Hn[n], counted ? Cn[n] : 0, sp[c], p, cat,
                           forward_ok[f], s, mono != nullptr ? &mnode : nullptr, kmin, nullptr, 0);
      }
    };
    scan(0, k * F);
    for (int64_t c = 0; c < k; ++c) {
      cand[c] = Cand{-std::numeric_limits<float>::infinity(), 0, false};
      bf[c] = 0;
      for (int64_t f = 0; f < F; ++f)
        if (best[c * F + f].gain > cand[c].gain) {
          cand[c] = best[c * F + f];
          bf[c] = f;
        }
    }
  };
  LeafQueue queue;  // items: indices into leaf_of
  std::vector<Leaf> leaf_of;  // the queue's leaves
  {
    Leaf root{0, 0, 0, static_cast<int32_t>(N), Cand{}, 0, 0};
    const int64_t i0 = 0;
    const int32_t s0 = 0;
    find_splits(1, &i0, &s0, &root.best, &root.bf);
    if (root.best.gain > kMinSplitGain) {
      leaf_of.push_back(root);
      queue.push(LeafEntry{root.best.gain, 0, 0});
    }
  }
  auto goes_left = [&](int64_t i, uint8_t bv) {
    return (cat != nullptr && o.is_cat[i])
               ? ((o.bits[i * kCatWords + (bv >> 5)] >> (bv & 31)) & 1u) != 0
               : (bv == B - 1 ? o.dleft[i] : bv < o.tbin[i]);
  };
  int64_t leaves = 1, next_alloc = 1;
  while (!queue.empty() && leaves < in.max_leaves) {
    const Leaf x = leaf_of[queue.top().item];
    queue.pop();
    ++leaves;
    const int64_t i = x.i, bf = x.bf;
    const bool left_small =
        RecordSplit(o, cat, i, x.best, bf, base + x.slot * ns + bf * FS,
                    counted ? cbase + x.slot * ns + bf * FS : nullptr, B, p, nullptr, 0, Cn.data(),
                    mono, lo.data(), hi.data());
    const int64_t li = 2 * i + 1, ri = 2 * i + 2;
    const int64_t a_left = next_alloc++, a_right = next_alloc++;
    // The children may split when they are above the depth and leaves may still be
    // added; else only the rows' leaves are written.
    const bool more = depth_of(li) < D && leaves < in.max_leaves;
    uint8_t to_left[256];
    const bool table = x.s1 - x.s0 >= 256;
    if (table)
      for (int v = 0; v < 256; ++v) to_left[v] = goes_left(i, static_cast<uint8_t>(v));
    int32_t* const rows = idx.get();
    const int32_t to_l = static_cast<int32_t>(li);
    int32_t n_left = 0;
    if (!more) {  // the rows' leaves only
      for (int32_t q = x.s0; q < x.s1; ++q) {
        const int32_t r = rows[q];
        const uint8_t bv = bins[static_cast<int64_t>(r) * F + bf];
        o.pos[r] = to_l + !(table ? to_left[bv] != 0 : goes_left(i, bv));
      }
    } else {
      n_left = PartitionRows(rows, tmp.get(), x.s0, x.s1, bins, F, bf, o.pos, to_l, [&](uint8_t bv) {
        return table ? to_left[bv] != 0 : goes_left(i, bv);
      });
    }
    if (!more) {
      free_slots.push_back(x.slot);
      continue;
    }
    // The smaller child (by H, as GrowTree) takes a free slot and is histogrammed; the
    // larger one keeps the parent's slot, minus the smaller child.
    const int32_t q0 = left_small ? x.s0 : x.s0 + n_left, q1 = left_small ? x.s0 + n_left : x.s1;
    const int32_t ss = free_slots.back();
    free_slots.pop_back();
    v2d* const sm = base + ss * ns;
    int32_t* const smc = counted ? cbase + ss * ns : nullptr;
    std::memset(static_cast<void*>(sm), 0, sizeof(v2d) * ns);
    if (counted) std::memset(static_cast<void*>(smc), 0, sizeof(int32_t) * ns);
    histogram(q0, q1, sm, smc);
    v2d* const lg = base + x.slot * ns;
    int32_t* const lc = counted ? cbase + x.slot * ns : nullptr;
    for (int64_t f = 0; f < F; ++f)
      for (int64_t j = 0; j < B; ++j) lg[f * FS + j] = lg[f * FS + j] - sm[f * FS + j];
    if (counted)
      for (int64_t f = 0; f < F; ++f)
        for (int64_t j = 0; j < B; ++j) lc[f * FS + j] -= smc[f * FS + j];
    if (C > 0) {  // both children's paths: the parent's and its split feature
      std::memcpy(used.data() + ss * F, used.data() + x.slot * F, static_cast<size_t>(F));
      std::memcpy(rel.data() + ss * C, rel.data() + x.slot * C, static_cast<size_t>(C));
      for (const int32_t sl : {x.slot, ss}) {
        used[sl * F + bf] = 1;
        for (int64_t j = 0; j < C; ++j) rel[sl * C + j] = rel[sl * C + j] && in.sets[j * F + bf];
      }
    }
    const int64_t ci[2] = {li, ri};
    const int32_t cs[2] = {left_small ? ss : x.slot, left_small ? x.slot : ss};
    const int32_t cq0[2] = {x.s0, x.s0 + n_left}, cq1[2] = {x.s0 + n_left, x.s1};
    const int64_t ca[2] = {a_left, a_right};
    Cand cc[2];
    int64_t cf[2];
    find_splits(2, ci, cs, cc, cf);
    for (int c = 0; c < 2; ++c) {
      if (!(cc[c].gain > kMinSplitGain)) {
        free_slots.push_back(cs[c]);
        continue;
      }
      leaf_of.push_back(Leaf{ci[c], cs[c], cq0[c], cq1[c], cc[c], cf[c], ca[c]});
      queue.push(LeafEntry{cc[c].gain, ca[c], static_cast<int64_t>(leaf_of.size() - 1)});
    }
  }
  PruneAndLeaves(in, o);
  return ffi::Error::Success();
}

template <typename T, typename Bn>
ffi::Error GrowTreeDispatch(const Bn* bins, const T* g, const T* h, const TreeIn& in,
                            const TreeOut& o, int64_t nt, ffi::ThreadPool* pool) {
  // Leaf-wise trees: best first on one thread (GrowLeafWise); on several, GrowTree
  // level by level, each level keeping only the splits the best-first walk can expand
  // (PruneLeafWise), its pairs of children on the threads and, above 2**22 rows x
  // features, its rows read in order. The same trees either way. python
  // benchmarks/lossguide.py (100,000 x 20, 100 rounds, depth 8 / 12): 31 leaves, one
  // thread, best first 0.44 / 0.46 s against 0.53 / 0.56 s; two threads 0.42 / 0.48
  // against 0.39 / 0.45 s, and 255 leaves 0.75 / 1.22 against 0.47 / 0.74 s (best first
  // splits one leaf at a time). 1,000,000 x 28, 31 leaves, depth 12, two threads: 52 ms a
  // tree level by level against 93 ms best first, whose smaller children gather
  // scattered rows.
  if constexpr (sizeof(Bn) == 1) {
    if (in.max_leaves > 0 && std::min(nt, in.N) <= 1) {
      if (in.B <= 16) return GrowLeafWise<20, T>(bins, g, h, in, o);
      if (in.B <= 32) return GrowLeafWise<36, T>(bins, g, h, in, o);
      if (in.B <= 64) return GrowLeafWise<68, T>(bins, g, h, in, o);
      if (in.B <= 128) return GrowLeafWise<132, T>(bins, g, h, in, o);
      return GrowLeafWise<260, T>(bins, g, h, in, o);
    }
  }
  if (in.B <= 16) return GrowTree<20, T>(bins, g, h, in, o, nt, pool);
  if (in.B <= 32) return GrowTree<36, T>(bins, g, h, in, o, nt, pool);
  if (in.B <= 64) return GrowTree<68, T>(bins, g, h, in, o, nt, pool);
  if (in.B <= 128) return GrowTree<132, T>(bins, g, h, in, o, nt, pool);
  if (sizeof(Bn) == 1 || in.B <= 256) return GrowTree<260, T>(bins, g, h, in, o, nt, pool);
  if constexpr (sizeof(Bn) > 1) {  // uint16 bins: up to kWideBins (GrowTreesRun checks)
    if (in.B <= 512) return GrowTree<516, T>(bins, g, h, in, o, nt, pool);
    if (in.B <= 1024) return GrowTree<1028, T>(bins, g, h, in, o, nt, pool);
    if (in.B <= 2048) return GrowTree<2052, T>(bins, g, h, in, o, nt, pool);
    return GrowTree<4100, T>(bins, g, h, in, o, nt, pool);
  }
  return ffi::Error::InvalidArgument("jaxboost_grow_tree: n_bins out of range");
}

// JaxboostGrowTree (kBatched false): one tree, grown by n_threads threads.
// JaxboostGrowTrees (kBatched true): T whole trees on the same bins, T independent
// calls of JaxboostGrowTree, one tree per worker, each tree grown by one thread. For
// data too small for threads within a tree (a round's K class trees on a few thousand
// rows), the trees themselves run in parallel. Every tree is what JaxboostGrowTree gives
// with n_threads = 1, bit for bit, whatever the number of workers.
//
// Batched inputs: bins (N, F) shared; g, h (T, N); hyper (T, 6) or (T, 7); root (T, 2);
// forward_ok (F,) shared; level_sets (T, D, F), node_key (T, 2), node_ratio (T, 1) when
// colsample. Outputs: JaxboostGrowTree's with a leading T. n_threads: workers.
// The tree handlers' shared work; cat (null: every feature numeric) with its outputs
// is_cat ([T,] M) and bits ([T,] M, 8).
template <bool kBatched>
ffi::Error GrowTreesRun(ffi::ThreadPool& thread_pool, ffi::AnyBuffer& bins,
                        ffi::AnyBuffer& g, ffi::AnyBuffer& h, ffi::Buffer<ffi::F32>& hyper,
                        ffi::Buffer<ffi::F64>& root, ffi::Buffer<ffi::PRED>& forward_ok,
                        ffi::Buffer<ffi::PRED>& level_sets, ffi::Buffer<ffi::U32>& node_key,
                        ffi::Buffer<ffi::F32>& node_ratio, ffi::Buffer<ffi::PRED>& sets,
                        ffi::Buffer<ffi::S32>& mono, ffi::Buffer<ffi::F32>& counts,
                        ffi::Buffer<ffi::S32>& min_leaf, ffi::ResultBuffer<ffi::S32>& feature,
                        ffi::ResultBuffer<ffi::S32>& tbin, ffi::ResultBuffer<ffi::PRED>& dleft,
                        ffi::ResultBuffer<ffi::PRED>& is_split,
                        ffi::ResultBuffer<ffi::F32>& gain, ffi::ResultBuffer<ffi::F64>& Gn,
                        ffi::ResultBuffer<ffi::F64>& Hn, ffi::ResultBuffer<ffi::S32>& pos,
                        int64_t max_depth, int64_t n_bins, int64_t n_threads,
                        bool use_xla_pool, bool colsample, int64_t max_leaves,
                        const CatIn* cat, bool* is_cat, uint32_t* bits) {
  const char* name = kBatched ? "jaxboost_grow_trees" : "jaxboost_grow_tree";
  const auto bd = bins.dimensions();
  const auto gd = g.dimensions();
  if (bd.size() != 2)
    return ffi::Error::InvalidArgument(std::string(name) + ": bins must be (N, F)");
  // uint8 bins: up to 256 a feature; uint16 bins: up to kWideBins (categorical features
  // keep their at most 256 category slots below the missing-value bin; no few-row lists),
  // leaf-wise trees level by level (GrowTree with PruneLeafWise, not GrowLeafWise: the
  // same trees)
  const bool wide = bins.element_type() == ffi::DataType::U16;
  if (!wide && bins.element_type() != ffi::DataType::U8)
    return ffi::Error::InvalidArgument(std::string(name) + ": bins must be uint8 or uint16");
  if (!wide && n_bins > 256)
    return ffi::Error::InvalidArgument(std::string(name) + ": n_bins in [2, 256] for uint8 bins");
  if (kBatched && (gd.size() != 2 || gd[1] != bd[0]))
    return ffi::Error::InvalidArgument(std::string(name) + ": g, h must be (T, N)");
  if (n_threads < 1 || n_threads > 4096)
    return ffi::Error::InvalidArgument(std::string(name) + ": n_threads must be in [1, 4096]");
  const int64_t T = kBatched ? gd[0] : 1, N = bd[0];
  const TreeIn base{N, bd[1], n_bins, max_depth, nullptr, nullptr, nullptr, nullptr,
                    nullptr, 1.0f, max_leaves};
  std::vector<TreeIn> ins;
  std::vector<TreeOut> outs;
  ffi::Error err = DecodeTrees(name, T, g, h, hyper, root, forward_ok, level_sets, node_key,
                               node_ratio, colsample, feature, tbin, dleft, is_split, gain, Gn,
                               Hn, pos, base, &ins, &outs);
  if (err.failure()) return err;
  const auto sd = sets.dimensions();
  if (sd.size() != 2 || (sd[0] > 0 && sd[1] != bd[1]))
    return ffi::Error::InvalidArgument(std::string(name) + ": sets must be (C, F)");
  for (int64_t t = 0; t < T && sd[0] > 0; ++t) {
    ins[t].sets = sets.typed_data();
    ins[t].n_sets = sd[0];
  }
  if (mono.element_count() != 0 && mono.element_count() != static_cast<size_t>(bd[1]))
    return ffi::Error::InvalidArgument(std::string(name) + ": mono must be (F,) or (0,)");
  for (int64_t t = 0; t < T && mono.element_count() > 0; ++t) {
    if (cat != nullptr)
      return ffi::Error::InvalidArgument(std::string(name) + ": mono with categorical features");
    ins[t].mono = mono.typed_data();
  }
  if (counts.element_count() != 0) {  // the row minimum: counts ([T,] N), min_leaf (1,)
    if (counts.element_count() != static_cast<size_t>(T * N) || min_leaf.element_count() != 1)
      return ffi::Error::InvalidArgument(std::string(name) +
                                         ": counts must be ([T,] N) with min_leaf (1,)");
    for (int64_t t = 0; t < T; ++t) {
      ins[t].cnt = counts.typed_data() + t * N;
      ins[t].min_leaf = min_leaf.typed_data()[0];
    }
  }
  const int64_t M = (int64_t{2} << max_depth) - 1;
  for (int64_t t = 0; t < T && cat != nullptr; ++t) {
    ins[t].cat = cat;
    outs[t].is_cat = is_cat + t * M;
    outs[t].bits = bits + t * M * kCatWords;
  }
  if (N == 0 || base.F == 0) {  // single leaves
    for (int64_t t = 0; t < T; ++t) ResetTree(ins[t], outs[t]);
    return ffi::Error::Success();
  }
  ffi::ThreadPool* pool = use_xla_pool && thread_pool.num_threads() > 0 ? &thread_pool : nullptr;
  auto run = [&](const auto* b) -> ffi::Error {
    if (!kBatched) {
      return WithRows(name, g, h, [&](auto* gp, auto* hp) {
        return GrowTreeDispatch(b, gp, hp, ins[0], outs[0], n_threads, pool);
      });
    }
    std::vector<std::string> errors(static_cast<size_t>(T));
    ParallelFor(pool, n_threads, T, [&](int64_t t, int64_t) {
      ffi::Error e = WithRows(name, g, h, [&](auto* gp, auto* hp) {
        return GrowTreeDispatch(b, gp + t * N, hp + t * N, ins[t], outs[t], 1, nullptr);
      });
      if (e.failure()) errors[t] = e.message();
    });
    for (int64_t t = 0; t < T; ++t)
      if (!errors[t].empty()) return ffi::Error::Internal(errors[t]);
    return ffi::Error::Success();
  };
  return wide ? run(static_cast<const uint16_t*>(bins.untyped_data()))
              : run(static_cast<const uint8_t*>(bins.untyped_data()));
}

// JaxboostGrowTree (kBatched false): one tree, grown by n_threads threads.
// JaxboostGrowTrees (kBatched true): T whole trees on the same bins, T independent
// calls of JaxboostGrowTree, one tree per worker, each tree grown by one thread. For
// data too small for threads within a tree (a round's K class trees on a few thousand
// rows), the trees themselves run in parallel. Every tree is what JaxboostGrowTree gives
// with n_threads = 1, bit for bit, whatever the number of workers.
//
// Batched inputs: bins (N, F) shared; g, h (T, N); hyper (T, 6) or (T, 7); root (T, 2);
// forward_ok (F,) shared; level_sets (T, D, F), node_key (T, 2), node_ratio (T, 1) when
// colsample. Outputs: JaxboostGrowTree's with a leading T. n_threads: workers.
template <bool kBatched>
ffi::Error GrowTreesImpl(ffi::ThreadPool thread_pool, ffi::AnyBuffer bins,
                         ffi::AnyBuffer g, ffi::AnyBuffer h, ffi::Buffer<ffi::F32> hyper,
                         ffi::Buffer<ffi::F64> root, ffi::Buffer<ffi::PRED> forward_ok,
                         ffi::Buffer<ffi::PRED> level_sets, ffi::Buffer<ffi::U32> node_key,
                         ffi::Buffer<ffi::F32> node_ratio, ffi::Buffer<ffi::PRED> sets,
                         ffi::Buffer<ffi::S32> mono, ffi::Buffer<ffi::F32> counts,
                         ffi::Buffer<ffi::S32> min_leaf, ffi::ResultBuffer<ffi::S32> feature,
                         ffi::ResultBuffer<ffi::S32> tbin, ffi::ResultBuffer<ffi::PRED> dleft,
                         ffi::ResultBuffer<ffi::PRED> is_split,
                         ffi::ResultBuffer<ffi::F32> gain, ffi::ResultBuffer<ffi::F64> Gn,
                         ffi::ResultBuffer<ffi::F64> Hn, ffi::ResultBuffer<ffi::S32> pos,
                         int64_t max_depth, int64_t n_bins, int64_t n_threads,
                         bool use_xla_pool, bool colsample, int64_t max_leaves) {
  return GrowTreesRun<kBatched>(thread_pool, bins, g, h, hyper, root, forward_ok, level_sets,
                                node_key, node_ratio, sets, mono, counts, min_leaf, feature, tbin, dleft, is_split, gain, Gn,
                                Hn, pos, max_depth, n_bins, n_threads, use_xla_pool, colsample,
                                max_leaves, nullptr, nullptr, nullptr);
}

// JaxboostGrowTreeCat / JaxboostGrowTreesCat: the same with categorical features.
// Extra inputs (shared by the T trees): cat_kind (F,) int32 (0 numeric, 1 one-vs-rest,
// 2 partition), n_cats (F,) int32, seen (F, n_bins) bool, max_cat_threshold (1,)
// int32; attribute cat_slots (S: the bins that can hold categories). Extra outputs:
// is_cat ([T,] M) bool, bits ([T,] M, 8) uint32 (categorical.pack_bits of the bins
// each categorical split sends left).
template <bool kBatched>
ffi::Error GrowTreesCatImpl(
    ffi::ThreadPool thread_pool, ffi::AnyBuffer bins, ffi::AnyBuffer g, ffi::AnyBuffer h,
    ffi::Buffer<ffi::F32> hyper, ffi::Buffer<ffi::F64> root, ffi::Buffer<ffi::PRED> forward_ok,
    ffi::Buffer<ffi::PRED> level_sets, ffi::Buffer<ffi::U32> node_key,
    ffi::Buffer<ffi::F32> node_ratio, ffi::Buffer<ffi::PRED> sets, ffi::Buffer<ffi::S32> mono,
    ffi::Buffer<ffi::F32> counts, ffi::Buffer<ffi::S32> min_leaf, ffi::Buffer<ffi::S32> cat_kind,
    ffi::Buffer<ffi::S32> n_cats, ffi::Buffer<ffi::PRED> seen,
    ffi::Buffer<ffi::S32> max_cat_threshold, ffi::ResultBuffer<ffi::S32> feature,
    ffi::ResultBuffer<ffi::S32> tbin, ffi::ResultBuffer<ffi::PRED> dleft,
    ffi::ResultBuffer<ffi::PRED> is_split, ffi::ResultBuffer<ffi::F32> gain,
    ffi::ResultBuffer<ffi::F64> Gn, ffi::ResultBuffer<ffi::F64> Hn,
    ffi::ResultBuffer<ffi::S32> pos, ffi::ResultBuffer<ffi::PRED> is_cat,
    ffi::ResultBuffer<ffi::U32> bits, int64_t max_depth, int64_t n_bins, int64_t n_threads,
    bool use_xla_pool, bool colsample, int64_t max_leaves, int64_t cat_slots) {
  const std::string k = kBatched ? "jaxboost_grow_trees_cat" : "jaxboost_grow_tree_cat";
  const auto bd = bins.dimensions();
  if (bd.size() != 2) return ffi::Error::InvalidArgument(k + ": bins must be (N, F)");
  const int64_t F = bd[1];
  const size_t f_ = static_cast<size_t>(F);
  if (cat_kind.element_count() != f_ || n_cats.element_count() != f_ ||
      seen.element_count() != f_ * static_cast<size_t>(n_bins) ||
      max_cat_threshold.element_count() != 1)
    return ffi::Error::InvalidArgument(
        k + ": cat_kind (F,), n_cats (F,), seen (F, n_bins), max_cat_threshold (1,)");
  if (cat_slots < 1 || cat_slots > n_bins - 1 || cat_slots > 32 * kCatWords)
    return ffi::Error::InvalidArgument(k + ": cat_slots must be in [1, min(n_bins - 1, 256)]");
  const int32_t* kind = cat_kind.typed_data();
  const int32_t* nc = n_cats.typed_data();
  for (int64_t f = 0; f < F; ++f)  // the kernel trusts them: check
    if (kind[f] < 0 || kind[f] > 2 || nc[f] < 0 || nc[f] > cat_slots)
      return ffi::Error::InvalidArgument(
          k + ": cat_kind must be 0, 1 or 2 and n_cats in [0, cat_slots]");
  const size_t T = kBatched ? static_cast<size_t>(g.dimensions()[0]) : 1;
  const size_t M = (size_t{2} << std::max<int64_t>(0, std::min<int64_t>(max_depth, 20))) - 1;
  if (is_cat->element_count() != T * M ||
      bits->element_count() != T * M * static_cast<size_t>(kCatWords))
    return ffi::Error::InvalidArgument(k + ": is_cat must be (M,) and bits (M, 8)");
  const CatIn cat{kind, nc, seen.typed_data(), max_cat_threshold.typed_data()[0], cat_slots};
  return GrowTreesRun<kBatched>(thread_pool, bins, g, h, hyper, root, forward_ok, level_sets,
                                node_key, node_ratio, sets, mono, counts, min_leaf, feature, tbin, dleft, is_split, gain, Gn,
                                Hn, pos, max_depth, n_bins, n_threads, use_xla_pool, colsample,
                                max_leaves, &cat, is_cat->typed_data(), bits->typed_data());
}

// ---------------------------------------------------------------------------------
// One whole tree from sparse columns (JaxboostGrowTreeSparse): what JaxboostGrowTree
// does, for a CSC matrix of bins whose absent entries are missing values, with work and
// memory that follow the stored entries, not rows x features.
//
// Inputs:  colptr (F + 1,) int32, feature f's entries at [colptr[f], colptr[f + 1]);
//          rows (nnz,) int32, their rows, ascending within each column; ebin (nnz,)
//          uint8 (n_bins <= 256) or uint16 (up to kWideBins), their bins (< n_bins - 1:
//          stored missing values are left out);
//          g, h (N,), hyper, root, forward_ok (F,), level_sets, node_key, node_ratio,
//          mono ((F,) int32 signs, or (0,): none) as JaxboostGrowTree's. Outputs and
//          attributes: JaxboostGrowTree's.
//
// Each level goes over the features once: a feature's stored entries are summed into
// small histograms of the level's live nodes (its own bins only: 0 .. nb_f - 1, nb_f
// one past its largest bin), each node that has an entry there is scanned right away
// and keeps its best candidate so far (features ascending, the first strictly greater
// gain wins: XGBoost's order); the histograms are then reused for the next feature.
// Missing-value sums (absent entries) are the node's totals minus its stored values'.
// Nothing of size rows x features or nodes x features x bins is formed: per level the
// work is the stored entries plus the rows. The candidates a dense histogram would add
// are its empty bins, which the dense scan skips: the same splits (the float64 sums of
// missing values associate differently).

template <typename Bn, typename T>
ffi::Error GrowTreeSparse(const int32_t* colptr, const int32_t* erow, const Bn* ebin,
                          const T* g, const T* h, const TreeIn& in, const TreeOut& o) {
  const int64_t N = in.N, F = in.F, B = in.B, D = in.G;  // levels grown (<= in.D)
  const bool* const forward_ok = in.forward_ok;
  const bool* const level_sets = in.level_sets;
  int32_t* const feature = o.feature;
  int32_t* const tbin = o.tbin;
  bool* const dleft = o.dleft;
  bool* const is_split = o.is_split;
  float* const gain = o.gain;
  double* const Gn = o.Gn;
  double* const Hn = o.Hn;
  int32_t* const pos = o.pos;
  const Hyp p = HypOf(in.hyper);
  ResetTree(in, o);
  std::vector<int32_t> nb(F, 0);  // one past each feature's largest bin
  for (int64_t f = 0; f < F; ++f)
    for (int32_t e = colptr[f]; e < colptr[f + 1]; ++e)
      nb[f] = std::max<int32_t>(nb[f], ebin[e] + 1);
  const int64_t W = int64_t{1} << (D - 1);
  const int64_t S = B;  // histogram slots per node (nb_f <= B - 1)
  Scratch<v2d> hist(W * S);
  std::vector<int32_t> node_of(N);   // the row's live node at this level, -1: none
  std::vector<int32_t> live{0}, next_live, stamp(W), touched;
  std::vector<float> sp(W);
  std::vector<Cand> best(W);
  std::vector<int32_t> bf(W);
  std::vector<double> cGL(W), cHL(W), cGP(W), cHP(W);  // best split's stored sums
  std::vector<uint8_t> node_mask, lg_keep;
  std::vector<std::pair<float, int32_t>> order;
  ScanStore<256> sstore;
  std::unique_ptr<ScanStore<kWideBins>> wide_store;  // uint16 bins
  ScanBuf sbuf = ScanBufFor(B, &sstore, &wide_store);
  // Monotone constraints: every heap node's bounds, as GrowTree keeps them.
  const int32_t* const mono = in.mono;
  const int64_t M = (int64_t{2} << in.D) - 1;
  const float kBig = std::numeric_limits<float>::max();
  std::vector<float> lo(mono != nullptr ? M : 0, -kBig), hi(mono != nullptr ? M : 0, kBig);
  for (int64_t d = 0; d < D; ++d) {
    const int64_t n = int64_t{1} << d;
    const int64_t nl = static_cast<int64_t>(live.size());
    // The level's live nodes that may split, and their rows.
    std::vector<int32_t> index_of(n, -1);
    for (int64_t c = 0; c < nl; ++c) {
      const int64_t i = n - 1 + live[c];
      if (!(p.mcw > 0 && Hn[i] < 2 * p.mcw * (1 - 1e-12))) index_of[live[c]] = c;
      sp[c] = mono != nullptr ? BoundedNodeScore(Gn[i], Hn[i], i, p, lo.data(), hi.data())
                              : Score(Gn[i], Hn[i], p);
      best[c] = Cand{-std::numeric_limits<float>::infinity(), 0, false};
      bf[c] = 0;
      stamp[c] = -1;
    }
    for (int64_t r = 0; r < N; ++r) {
      const int64_t k = static_cast<int64_t>(pos[r]) - (n - 1);
      node_of[r] = (k >= 0 && k < n) ? index_of[k] : -1;
    }
    if (level_sets != nullptr) {
      node_mask.resize(nl * F);
      for (int64_t c = 0; c < nl; ++c)
        NodeFeatures(level_sets + d * F, F, in.node_key, in.node_ratio,
                     (d * W + live[c]) * F, node_mask.data() + c * F, order);
    }
    for (int64_t f = 0; f < F; ++f) {
      const int32_t nbf = nb[f];
      if (nbf == 0) continue;
      touched.clear();
      for (int32_t e = colptr[f]; e < colptr[f + 1]; ++e) {
        const int32_t r = erow[e];
        const int32_t c = node_of[r];
        if (c < 0) continue;
        v2d* hc = hist.get() + static_cast<int64_t>(c) * S;
        if (stamp[c] != f) {
          stamp[c] = static_cast<int32_t>(f);
          touched.push_back(c);
          std::memset(static_cast<void*>(hc), 0, sizeof(v2d) * nbf);
        }
        hc[ebin[e]] += v2d{static_cast<double>(g[r]), static_cast<double>(h[r])};
      }
      for (const int32_t c : touched) {
        if (level_sets != nullptr && !node_mask[static_cast<int64_t>(c) * F + f]) continue;
        const int64_t i = n - 1 + live[c];
        const v2d* hc = hist.get() + static_cast<int64_t>(c) * S;
        MonoNode mnode{0.0f, 0.0f, 0};
        if (mono != nullptr) mnode = MonoNode{lo[i], hi[i], mono[f]};
        const Cand cf = ScanFeature(hc, nbf + 1, Gn[i], Hn[i], sp[c], forward_ok[f], p, sbuf,
                                    mono != nullptr ? &mnode : nullptr);
        if (cf.gain > best[c].gain) {
          best[c] = cf;
          bf[c] = static_cast<int32_t>(f);
          double GL = 0.0, HL = 0.0, GP = 0.0, HP = 0.0;
          for (int32_t j = 0; j < nbf; ++j) {
            if (j < cf.tbin) {
              GL += hc[j][0];
              HL += hc[j][1];
            } else {
              GP += hc[j][0];
              HP += hc[j][1];
            }
          }
          cGL[c] = GL;
          cHL[c] = HL;
          cGP[c] = GP;
          cHP[c] = HP;
        }
      }
    }
    // Decide and record; the split nodes' rows go the missing-value way first, then
    // those with a stored value of the split feature are placed by its bin.
    next_live.clear();
    std::vector<int32_t> split_feats;
    std::vector<uint8_t> splits(nl, 0);
    for (int64_t c = 0; c < nl; ++c) {
      if (!(best[c].gain > kMinSplitGain)) continue;
      const int64_t k = live[c], i = n - 1 + k;
      splits[c] = 1;
      feature[i] = bf[c];
      tbin[i] = best[c].tbin;
      dleft[i] = best[c].dl;
      is_split[i] = true;
      gain[i] = best[c].gain;
      const double Gm = Gn[i] - (cGL[c] + cGP[c]), Hm = Hn[i] - (cHL[c] + cHP[c]);
      double GL = cGL[c], HL = cHL[c], GR = cGP[c], HR = cHP[c];
      if (best[c].dl) {
        GL += Gm;
        HL += Hm;
      } else {
        GR += Gm;
        HR += Hm;
      }
      Gn[2 * i + 1] = GL;
      Hn[2 * i + 1] = HL;
      Gn[2 * i + 2] = GR;
      Hn[2 * i + 2] = HR;
      if (mono != nullptr) ChildBounds(i, GL, HL, GR, HR, mono[bf[c]], p, lo.data(), hi.data());
      split_feats.push_back(bf[c]);
      next_live.push_back(static_cast<int32_t>(2 * k));
      next_live.push_back(static_cast<int32_t>(2 * k + 1));
    }
    if (in.max_leaves > 0) {  // leaf-wise: only the splits the best-first walk can expand
      PruneLeafWise(in, o, d, &lg_keep, [&](int64_t i) { splits[index_of[i - (n - 1)]] = 0; });
      next_live.clear();
      for (int64_t c = 0; c < nl; ++c)
        if (splits[c]) {
          next_live.push_back(2 * live[c]);
          next_live.push_back(2 * live[c] + 1);
        }
    }
    if (next_live.empty()) break;
    for (int64_t r = 0; r < N; ++r) {
      const int32_t c = node_of[r];
      if (c >= 0 && splits[c]) {
        const int64_t i = n - 1 + live[c];
        pos[r] = static_cast<int32_t>(2 * i + (dleft[i] ? 1 : 2));
      }
    }
    std::sort(split_feats.begin(), split_feats.end());
    split_feats.erase(std::unique(split_feats.begin(), split_feats.end()), split_feats.end());
    for (const int32_t f : split_feats) {
      for (int32_t e = colptr[f]; e < colptr[f + 1]; ++e) {
        const int32_t r = erow[e];
        const int32_t c = node_of[r];
        if (c < 0 || !splits[c] || bf[c] != f) continue;
        const int64_t i = n - 1 + live[c];
        pos[r] = static_cast<int32_t>(2 * i + (ebin[e] < tbin[i] ? 1 : 2));
      }
    }
    live.swap(next_live);
  }
  LossGuide(in, o);
  PruneAndLeaves(in, o);
  return ffi::Error::Success();
}

ffi::Error GrowTreeSparseImpl(ffi::Buffer<ffi::S32> colptr, ffi::Buffer<ffi::S32> erow,
                              ffi::AnyBuffer ebin, ffi::AnyBuffer g, ffi::AnyBuffer h,
                              ffi::Buffer<ffi::F32> hyper, ffi::Buffer<ffi::F64> root,
                              ffi::Buffer<ffi::PRED> forward_ok,
                              ffi::Buffer<ffi::PRED> level_sets, ffi::Buffer<ffi::U32> node_key,
                              ffi::Buffer<ffi::F32> node_ratio, ffi::Buffer<ffi::S32> mono,
                              ffi::ResultBuffer<ffi::S32> feature, ffi::ResultBuffer<ffi::S32> tbin,
                              ffi::ResultBuffer<ffi::PRED> dleft,
                              ffi::ResultBuffer<ffi::PRED> is_split,
                              ffi::ResultBuffer<ffi::F32> gain, ffi::ResultBuffer<ffi::F64> Gn,
                              ffi::ResultBuffer<ffi::F64> Hn, ffi::ResultBuffer<ffi::S32> pos,
                              int64_t max_depth, int64_t n_bins, bool colsample,
                              int64_t max_leaves) {
  const int64_t F = static_cast<int64_t>(colptr.element_count()) - 1;
  const int64_t nnz = static_cast<int64_t>(erow.element_count());
  const int64_t N = static_cast<int64_t>(g.element_count());
  const int64_t B = n_bins;
  if (F < 0) return ffi::Error::InvalidArgument("jaxboost_grow_tree_sparse: colptr must be (F + 1,)");
  const bool wide = ebin.element_type() == ffi::DataType::U16;
  if (!wide && ebin.element_type() != ffi::DataType::U8)
    return ffi::Error::InvalidArgument("jaxboost_grow_tree_sparse: ebin must be uint8 or uint16");
  if (B < 2 || B > (wide ? kWideBins : 256))
    return ffi::Error::InvalidArgument(
        "jaxboost_grow_tree_sparse: n_bins in [2, 256] (uint8 ebin) or [2, 4096] (uint16)");
  const TreeIn base{N, F, B, max_depth, nullptr, nullptr, nullptr, nullptr, nullptr, 1.0f,
                    max_leaves};
  std::vector<TreeIn> ins;
  std::vector<TreeOut> outs;
  ffi::Error err = DecodeTrees("jaxboost_grow_tree_sparse", 1, g, h, hyper, root, forward_ok,
                               level_sets, node_key, node_ratio, colsample, feature, tbin,
                               dleft, is_split, gain, Gn, Hn, pos, base, &ins, &outs);
  if (err.failure()) return err;
  if (mono.element_count() != 0 && mono.element_count() != static_cast<size_t>(F))
    return ffi::Error::InvalidArgument("jaxboost_grow_tree_sparse: mono must be (F,) or (0,)");
  if (mono.element_count() > 0) ins[0].mono = mono.typed_data();
  const TreeIn& in = ins[0];
  const TreeOut& o = outs[0];
  if (ebin.element_count() != static_cast<size_t>(nnz))
    return ffi::Error::InvalidArgument("jaxboost_grow_tree_sparse: rows and ebin must be (nnz,)");
  // The structure is checked here (the kernel trusts it): a bad index would read or
  // write outside its buffers.
  const int32_t* cp = colptr.typed_data();
  const int32_t* er = erow.typed_data();
  if (cp[0] != 0 || cp[F] != nnz)
    return ffi::Error::InvalidArgument("jaxboost_grow_tree_sparse: colptr must run from 0 to nnz");
  for (int64_t f = 0; f < F; ++f)
    if (cp[f + 1] < cp[f])
      return ffi::Error::InvalidArgument("jaxboost_grow_tree_sparse: colptr must not decrease");
  for (int64_t e = 0; e < nnz; ++e)
    if (er[e] < 0 || er[e] >= N)
      return ffi::Error::InvalidArgument("jaxboost_grow_tree_sparse: row index out of range");
  auto run = [&](const auto* eb) -> ffi::Error {
    for (int64_t e = 0; e < nnz; ++e)
      if (eb[e] >= B - 1)
        return ffi::Error::InvalidArgument(
            "jaxboost_grow_tree_sparse: stored bins must be < n_bins - 1 (missing: leave out)");
    return WithRows("jaxboost_grow_tree_sparse", g, h, [&](auto* gp, auto* hp) {
      return GrowTreeSparse(cp, er, eb, gp, hp, in, o);
    });
  };
  if (wide) return run(reinterpret_cast<const uint16_t*>(ebin.untyped_data()));
  return run(reinterpret_cast<const uint8_t*>(ebin.untyped_data()));
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(JaxboostHistogram, HistogramImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()        // XLA:CPU intra-op pool
                                  .Arg<ffi::AnyBuffer>()         // bins (N, F) uint8/uint16
                                  .Arg<ffi::AnyBuffer>()         // g (N,)
                                  .Arg<ffi::AnyBuffer>()         // h (N,)
                                  .Arg<ffi::Buffer<ffi::S32>>()  // node (N,)
                                  .Arg<ffi::Buffer<ffi::S32>>()  // n_active ()
                                  .Ret<ffi::Buffer<ffi::F64>>()  // G (F, n_nodes, n_bins)
                                  .Ret<ffi::Buffer<ffi::F64>>()  // H (F, n_nodes, n_bins)
                                  .Attr<int64_t>("n_threads")
                                  .Attr<bool>("use_xla_pool"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(JaxboostHistogramChannels, HistogramChannelsImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()        // XLA:CPU intra-op pool
                                  .Arg<ffi::Buffer<ffi::U8>>()   // bins (N, F)
                                  .Arg<ffi::AnyBuffer>()         // vals (N, C)
                                  .Arg<ffi::Buffer<ffi::S32>>()  // node (N,)
                                  .Arg<ffi::Buffer<ffi::S32>>()  // n_active ()
                                  .Ret<ffi::Buffer<ffi::F64>>()  // S (F, n_nodes, n_bins, C)
                                  .Attr<int64_t>("n_threads")
                                  .Attr<bool>("use_xla_pool"));

// The tree handlers' arguments: one tree's shapes, or T trees' with a leading T
// (JaxboostGrowTrees), in three parts, so that the categorical handlers add theirs
// after each.
template <typename Binding>
static auto TreeInputs(Binding b) {
  return std::move(b).template Arg<ffi::AnyBuffer>()  // bins (N, F) uint8/uint16, shared
      .template Arg<ffi::AnyBuffer>()              // g ([T,] N)
      .template Arg<ffi::AnyBuffer>()              // h ([T,] N)
      .template Arg<ffi::Buffer<ffi::F32>>()       // hyper ([T,] 6|7)
      .template Arg<ffi::Buffer<ffi::F64>>()       // root ([T,] 2)
      .template Arg<ffi::Buffer<ffi::PRED>>()      // forward_ok (F,), shared
      .template Arg<ffi::Buffer<ffi::PRED>>()      // level_sets ([T,] D, F)
      .template Arg<ffi::Buffer<ffi::U32>>()       // node_key ([T,] 2)
      .template Arg<ffi::Buffer<ffi::F32>>()       // node_ratio ([T,] 1)
      .template Arg<ffi::Buffer<ffi::PRED>>()      // sets (C, F), shared (C = 0: none)
      .template Arg<ffi::Buffer<ffi::S32>>()       // mono (F,) signs, shared ((0,): none)
      .template Arg<ffi::Buffer<ffi::F32>>()       // counts ([T,] N) rows' counts ((0,): none)
      .template Arg<ffi::Buffer<ffi::S32>>();      // min_leaf (1,) ((0,): none)
}

template <typename Binding>
static auto TreeOutputs(Binding b) {
  return std::move(b).template Ret<ffi::Buffer<ffi::S32>>()  // feature ([T,] M)
      .template Ret<ffi::Buffer<ffi::S32>>()       // tbin ([T,] M)
      .template Ret<ffi::Buffer<ffi::PRED>>()      // default_left ([T,] M)
      .template Ret<ffi::Buffer<ffi::PRED>>()      // is_split ([T,] M)
      .template Ret<ffi::Buffer<ffi::F32>>()       // gain ([T,] M)
      .template Ret<ffi::Buffer<ffi::F64>>()       // Gn ([T,] M)
      .template Ret<ffi::Buffer<ffi::F64>>()       // Hn ([T,] M)
      .template Ret<ffi::Buffer<ffi::S32>>();      // pos ([T,] N)
}

template <typename Binding>
static auto TreeAttrs(Binding b) {
  return std::move(b).template Attr<int64_t>("max_depth")
      .template Attr<int64_t>("n_bins")
      .template Attr<int64_t>("n_threads")
      .template Attr<bool>("use_xla_pool")
      .template Attr<bool>("colsample")
      .template Attr<int64_t>("max_leaves");
}

static auto GrowTreeBinding() {
  return TreeAttrs(TreeOutputs(TreeInputs(ffi::Ffi::Bind().Ctx<ffi::ThreadPool>())));
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(JaxboostGrowTree, GrowTreesImpl<false>, GrowTreeBinding());

XLA_FFI_DEFINE_HANDLER_SYMBOL(JaxboostGrowTrees, GrowTreesImpl<true>, GrowTreeBinding());

// JaxboostGrowTree's arguments with the categorical inputs and outputs.
static auto GrowTreeCatBinding() {
  // One expression: a Binding moves only into the next call of its chain.
  return TreeAttrs(
             TreeOutputs(TreeInputs(ffi::Ffi::Bind().Ctx<ffi::ThreadPool>())
                             .Arg<ffi::Buffer<ffi::S32>>()    // cat_kind (F,), shared
                             .Arg<ffi::Buffer<ffi::S32>>()    // n_cats (F,), shared
                             .Arg<ffi::Buffer<ffi::PRED>>()   // seen (F, n_bins), shared
                             .Arg<ffi::Buffer<ffi::S32>>())   // max_cat_threshold (1,)
                 .Ret<ffi::Buffer<ffi::PRED>>()               // is_cat ([T,] M)
                 .Ret<ffi::Buffer<ffi::U32>>())               // bits ([T,] M, 8)
      .Attr<int64_t>("cat_slots");
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(JaxboostGrowTreeCat, GrowTreesCatImpl<false>, GrowTreeCatBinding());

XLA_FFI_DEFINE_HANDLER_SYMBOL(JaxboostGrowTreesCat, GrowTreesCatImpl<true>, GrowTreeCatBinding());

XLA_FFI_DEFINE_HANDLER_SYMBOL(JaxboostGrowTreeSparse, GrowTreeSparseImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::S32>>()   // colptr (F + 1,)
                                  .Arg<ffi::Buffer<ffi::S32>>()   // rows (nnz,)
                                  .Arg<ffi::AnyBuffer>()          // ebin (nnz,) uint8 / uint16
                                  .Arg<ffi::AnyBuffer>()          // g (N,)
                                  .Arg<ffi::AnyBuffer>()          // h (N,)
                                  .Arg<ffi::Buffer<ffi::F32>>()   // hyper (6,)
                                  .Arg<ffi::Buffer<ffi::F64>>()   // root (2,)
                                  .Arg<ffi::Buffer<ffi::PRED>>()  // forward_ok (F,)
                                  .Arg<ffi::Buffer<ffi::PRED>>()  // level_sets (D, F)
                                  .Arg<ffi::Buffer<ffi::U32>>()   // node_key (2,)
                                  .Arg<ffi::Buffer<ffi::F32>>()   // node_ratio (1,)
                                  .Arg<ffi::Buffer<ffi::S32>>()   // mono (F,) or (0,)
                                  .Ret<ffi::Buffer<ffi::S32>>()   // feature (M,)
                                  .Ret<ffi::Buffer<ffi::S32>>()   // tbin (M,)
                                  .Ret<ffi::Buffer<ffi::PRED>>()  // default_left (M,)
                                  .Ret<ffi::Buffer<ffi::PRED>>()  // is_split (M,)
                                  .Ret<ffi::Buffer<ffi::F32>>()   // gain (M,)
                                  .Ret<ffi::Buffer<ffi::F64>>()   // Gn (M,)
                                  .Ret<ffi::Buffer<ffi::F64>>()   // Hn (M,)
                                  .Ret<ffi::Buffer<ffi::S32>>()   // leaf (N,)
                                  .Attr<int64_t>("max_depth")
                                  .Attr<int64_t>("n_bins")
                                  .Attr<bool>("colsample")
                                  .Attr<int64_t>("max_leaves"));

// Binning raw features (a plain C function, called through ctypes by
// jaxboost.engine.binning.apply_bins; the GIL is released, so Python runs it on several
// threads over row blocks).
//
// cuts: (F, 256) float32 per feature, the real cuts ascending, then NaN padding. The
// bin of x is the number of cuts <= x (numpy's searchsorted(side="right")): a
// branch-free binary search of 8 steps, since "cut <= x" is true on a prefix of the
// row (NaN padding compares false, so +inf lands after the real cuts). NaN x gets
// missing_bin. Rows [row_begin, row_end) of X (N, F) row-major; out[r * os_row +
// f * os_feat].
extern "C" void JaxboostApplyBins(const float* X, int64_t F, const float* cuts,
                                  uint8_t missing_bin, uint8_t* out, int64_t os_row,
                                  int64_t os_feat, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* x_row = X + r * F;
    for (int64_t f = 0; f < F; ++f) {
      const float x = x_row[f];
      const float* c = cuts + f * 256;
      int32_t pos = 0;
      for (int32_t step = 128; step >= 1; step >>= 1) {
        pos += (c[pos + step - 1] <= x) ? step : 0;
      }
      out[r * os_row + f * os_feat] = (x != x) ? missing_bin : static_cast<uint8_t>(pos);
    }
  }
}

// Prediction on raw features (a plain C function, called through ctypes by
// jaxboost.native.predict, which runs row blocks on several threads; the GIL is
// released). The same routing and sums as jaxboost.engine.tree.predict_margin:
// node i's children are 2i+1 (left) and 2i+2; a present x goes left when
// x < threshold, NaN when default_left; at a categorical split a code 0 <= x < 256
// goes left when its bit in cat_bits is set (x truncated to an integer), anything else
// when default_left. A row walks tree_depth[t] steps: the caller completes each tree
// to its depth (jaxboost.native.pack_trees: a leaf above the tree's last level becomes
// a split whose descendants there all hold its value), so no step tests for a leaf.
// margin (N, K) holds the margins before the trees and gets each tree's leaf value
// added in float32, tree by tree in order (XGBoost's order and predict_margin's), so
// the result equals predict_margin's bit for bit.
//
// Rows go in blocks of 64: every tree over a block, and within a tree the block's rows
// advance one level at a time, so the loads of 64 independent walks overlap (a walk
// row by row waits for each node before it can read the next). A block without NaN
// (checked once per block) walks without the default-direction test. tree_depth (T,)
// int32: each tree's depth (levels with a reachable split; at most the model's
// max_depth), so a row of a shallow tree takes its tree's steps, not the model's
// (digits, softmax: 2.9 on average against max_depth 6).
//
// X: (N, F) row-major float32; nodes: (T, M) PredictNode (feature, threshold);
// flags: (T, M) uint8 (1 = default left, 4 = categorical split); value (T, M, K)
// float32, or (T, M) when value_output is given: class trees held one output per tree
// (Ensemble), value_output (T,) int32 in [0, K), whose leaf value v goes to output
// value_output[t]. The (T, M, K) layout holds v * 0 (a zero with v's sign) on the other
// outputs, and adding those changes a sum only where it is -0.0 (adding +0.0 makes it
// +0.0) when v is finite (the caller passes the (T, M, K) layout when a value is not).
// So a held tree adds v to its own output only, and a row that ends with a -0.0 margin
// is summed again with every zero (AddTreesExact): the same sums bit for bit at one add
// per tree, not K. cat_bits: (T, M, 8) uint32, read only at categorical splits (null
// when none). Rows [row_begin, row_end).
struct PredictNode {
  int32_t feature;
  float threshold;
};

// 2 - (whether x goes left) at node j of a tree (its node, flags and category bits).
template <bool kCats, bool kNaN>
inline int32_t PredictStep(const PredictNode& n, uint8_t flags, float v, const uint32_t* bits) {
  int32_t left;
  if (kCats && (flags & 4u)) {
    if (v >= 0.0f && v < 256.0f) {
      const int32_t c = static_cast<int32_t>(v);
      left = static_cast<int32_t>((bits[c >> 5] >> (c & 31)) & 1u);
    } else {
      left = static_cast<int32_t>(flags & 1u);
    }
  } else if (kNaN) {
    left = static_cast<int32_t>(v < n.threshold) |
           (static_cast<int32_t>(v != v) & static_cast<int32_t>(flags & 1u));
  } else {
    left = static_cast<int32_t>(v < n.threshold);
  }
  return 2 - left;
}

// The rows of a block (row i's features at xb + i * F) through one tree: their leaf
// positions in pos.
template <bool kCats, bool kNaN>
inline void WalkBlock(const float* xb, int64_t F, const PredictNode* nd, const uint8_t* fl,
                      const uint32_t* bits, int32_t depth, int64_t nb, int32_t* pos) {
  for (int64_t i = 0; i < nb; ++i) pos[i] = 0;
  for (int32_t d = 0; d < depth; ++d) {
    const float* x = xb;
    for (int64_t i = 0; i < nb; ++i, x += F) {
      const int32_t p = pos[i];
      const PredictNode n = nd[p];
      pos[i] = 2 * p + PredictStep<kCats, kNaN>(n, kCats || kNaN ? fl[p] : 0, x[n.feature],
                                                 kCats ? bits + p * 8 : nullptr);
    }
  }
}

// One row through every held class tree, adding v to its output and v * 0 to the
// others: the (T, M, K) layout's sums, for the rows that end at -0.0.
template <bool kCats>
void AddTreesExact(const float* x, const PredictNode* nodes, const uint8_t* flags,
                   const float* value, const uint32_t* cat_bits, const int32_t* value_output,
                   const int32_t* tree_depth, int64_t T, int64_t M, int64_t K, float* m) {
  for (int64_t t = 0; t < T; ++t) {
    int32_t pos;
    WalkBlock<kCats, true>(x, 0, nodes + t * M, flags + t * M,
                           kCats ? cat_bits + t * M * 8 : nullptr, tree_depth[t], 1, &pos);
    const float v = value[t * M + pos];
    const float zero = v * 0.0f;
    const int64_t own = value_output[t];
    for (int64_t k = 0; k < K; ++k) m[k] += (k == own) ? v : zero;
  }
}

template <bool kCats>
void PredictRows(const float* X, int64_t F, const PredictNode* nodes, const uint8_t* flags,
                 const float* value, const uint32_t* cat_bits, const int32_t* value_output,
                 const int32_t* tree_depth, int64_t T, int64_t M, int64_t K, float* margin,
                 int64_t row_begin, int64_t row_end, bool check_nan = true) {
  constexpr int64_t kBlock = 64;
  int32_t pos[kBlock];
  const bool held = value_output != nullptr;
  std::vector<float> start(held ? kBlock * K : 0);  // a block's margins before the trees
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kBlock) {
    const int64_t nb = std::min(kBlock, row_end - r0);
    const float* xb = X + r0 * F;
    bool nan = !check_nan;  // unchecked: taken to hold NaN
    if (check_nan)
      for (int64_t j = 0; j < nb * F; ++j) nan |= xb[j] != xb[j];
    if (held) std::copy(margin + r0 * K, margin + (r0 + nb) * K, start.begin());
    for (int64_t t = 0; t < T; ++t) {
      const PredictNode* nd = nodes + t * M;
      const uint8_t* fl = flags + t * M;
      const uint32_t* bits = kCats ? cat_bits + t * M * 8 : nullptr;
      if (nan) {
        WalkBlock<kCats, true>(xb, F, nd, fl, bits, tree_depth[t], nb, pos);
      } else {
        WalkBlock<kCats, false>(xb, F, nd, fl, bits, tree_depth[t], nb, pos);
      }
      if (held) {
        const float* vt = value + t * M;
        float* m = margin + r0 * K + value_output[t];
        for (int64_t i = 0; i < nb; ++i) m[i * K] += vt[pos[i]];
        continue;
      }
      const float* vt = value + t * M * K;
      for (int64_t i = 0; i < nb; ++i) {
        float* m = margin + (r0 + i) * K;
        const float* v = vt + static_cast<int64_t>(pos[i]) * K;
        for (int64_t k = 0; k < K; ++k) m[k] += v[k];
      }
    }
    if (!held) continue;
    for (int64_t i = 0; i < nb; ++i) {  // rows at -0.0: summed again with the zeros
      float* m = margin + (r0 + i) * K;
      bool negative_zero = false;
      for (int64_t k = 0; k < K; ++k) negative_zero |= (m[k] == 0.0f) && std::signbit(m[k]);
      if (!negative_zero) continue;
      std::copy(start.begin() + i * K, start.begin() + (i + 1) * K, m);
      AddTreesExact<kCats>(xb + i * F, nodes, flags, value, cat_bits, value_output, tree_depth,
                           T, M, K, m);
    }
  }
}

extern "C" void JaxboostPredict(const float* X, int64_t F, const PredictNode* nodes,
                                const uint8_t* flags, const float* value,
                                const uint32_t* cat_bits, const int32_t* value_output,
                                const int32_t* tree_depth, int64_t T, int64_t M, int64_t K,
                                float* margin, int64_t row_begin, int64_t row_end) {
  if (cat_bits != nullptr) {
    PredictRows<true>(X, F, nodes, flags, value, cat_bits, value_output, tree_depth, T, M, K,
                      margin, row_begin, row_end);
  } else {
    PredictRows<false>(X, F, nodes, flags, value, cat_bits, value_output, tree_depth, T, M, K,
                       margin, row_begin, row_end);
  }
}

// TreeSHAP by pattern tables (jaxboost.model.explain, called through ctypes by
// jaxboost.native.shap_patterns; the GIL is released). A leaf path p of L elements
// (each a feature with the merged constraints of the path's edges on it) contributes to
// a row through the row's "one fractions" only: whether the row follows the path's
// edges on each element, a pattern of L bits. table (P, 2^L, L) float64 holds every
// path's contributions for every pattern (explain._pattern_table times the leaf value);
// a row computes its pattern per path and adds the L entries to its features' sums:
// out (N, F) float64, row-major, rows [row_begin, row_end).
//
// Element e of path p (arrays (P, L)): feature[p, e]; a present x follows iff
// (!has_lo || x >= lo) && (!has_hi || x < hi) (flags 1 = has_lo, 2 = has_hi); NaN iff
// missing_ok (4); on a categorical element (16) a code 0 <= x < 256 follows iff its bit
// is set in cats (P, L, 8) uint32, anything else iff missing_ok; padding (8) always
// follows (its entries are 0). As explain._Paths.ones. ShapPattern: the pattern of
// one row on path p (elements base .. base + L - 1 of the arrays).
inline int64_t ShapPattern(const float* x_row, const int32_t* feature, const double* lo,
                           const double* hi, const uint8_t* flags, const uint32_t* cats,
                           int64_t base, int64_t L) {
  int64_t code = 0;
  for (int64_t e = 0; e < L; ++e) {
    const uint8_t fl = flags[base + e];
    const double x = x_row[feature[base + e]];
    bool follow;
    if (fl & 8u) {
      follow = true;
    } else if (fl & 16u) {
      if (x >= 0.0 && x < 256.0) {
        const int64_t c = static_cast<int64_t>(x);
        follow = (cats[(base + e) * 8 + (c >> 5)] >> (c & 31)) & 1u;
      } else {
        follow = fl & 4u;
      }
    } else if (x != x) {
      follow = fl & 4u;
    } else {
      follow = (!(fl & 1u) || x >= lo[base + e]) && (!(fl & 2u) || x < hi[base + e]);
    }
    code |= static_cast<int64_t>(follow) << e;
  }
  return code;
}

extern "C" void JaxboostShapPatterns(const float* X, int64_t F, const int32_t* feature,
                                     const double* lo, const double* hi,
                                     const uint8_t* flags, const uint32_t* cats,
                                     const double* table, int64_t P, int64_t L, double* out,
                                     int64_t row_begin, int64_t row_end) {
  const int64_t patterns = int64_t{1} << L;
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* x_row = X + r * F;
    double* o = out + r * F;
    for (int64_t p = 0; p < P; ++p) {
      const int64_t base = p * L;
      const int64_t code = ShapPattern(x_row, feature, lo, hi, flags, cats, base, L);
      const double* t = table + (p * patterns + code) * L;
      for (int64_t e = 0; e < L; ++e) o[feature[base + e]] += t[e];
    }
  }
}

// SHAP interaction values by pattern tables: table (P, 2^L, L, L) float64, entry
// [p, pattern, e, j] = path p's contribution to the pair (feature of element e, feature
// of element j); out (N, F, F) float64, row-major. Otherwise as JaxboostShapPatterns.
extern "C" void JaxboostShapInteractionPatterns(const float* X, int64_t F,
                                                const int32_t* feature, const double* lo,
                                                const double* hi, const uint8_t* flags,
                                                const uint32_t* cats, const double* table,
                                                int64_t P, int64_t L, double* out,
                                                int64_t row_begin, int64_t row_end) {
  const int64_t patterns = int64_t{1} << L;
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* x_row = X + r * F;
    double* o = out + r * F * F;
    for (int64_t p = 0; p < P; ++p) {
      const int64_t base = p * L;
      const int64_t code = ShapPattern(x_row, feature, lo, hi, flags, cats, base, L);
      const double* t = table + (p * patterns + code) * L * L;
      for (int64_t e = 0; e < L; ++e) {
        double* oi = o + static_cast<int64_t>(feature[base + e]) * F;
        for (int64_t j = 0; j < L; ++j) oi[feature[base + j]] += t[e * L + j];
      }
    }
  }
}

// Prediction on a CSR matrix (absent entries missing, as NaN in a dense row): blocks of
// rows are written into a NaN block of up to 64 dense rows (at most 1 MiB: one row at a
// time from 262,144 columns up), walked as PredictRows walks dense rows (taken to hold
// NaN), and set back to NaN. The same sums as PredictRows on the dense rows, bit for
// bit, at the cost of the stored entries and the walks rather than N x F. indptr
// (N + 1,) int64, indices (nnz,) int32 in [0, F), data (nnz,) float32, canonical (no
// duplicates); other arguments as for JaxboostPredict.
template <bool kCats>
void PredictRowsCSR(const int64_t* indptr, const int32_t* indices, const float* data,
                    int64_t F, const PredictNode* nodes, const uint8_t* flags,
                    const float* value, const uint32_t* cat_bits, const int32_t* value_output,
                    const int32_t* tree_depth, int64_t T, int64_t M, int64_t K, float* margin,
                    int64_t row_begin, int64_t row_end) {
  const int64_t B =
      F > 0 ? std::max<int64_t>(1, std::min<int64_t>(64, (int64_t{1} << 18) / F)) : 64;
  std::vector<float> xb(B * F, std::numeric_limits<float>::quiet_NaN());
  for (int64_t r0 = row_begin; r0 < row_end; r0 += B) {
    const int64_t nb = std::min(B, row_end - r0);
    for (int64_t i = 0; i < nb; ++i)
      for (int64_t k = indptr[r0 + i]; k < indptr[r0 + i + 1]; ++k)
        xb[i * F + indices[k]] = data[k];
    PredictRows<kCats>(xb.data(), F, nodes, flags, value, cat_bits, value_output, tree_depth,
                       T, M, K, margin + r0 * K, 0, nb, /*check_nan=*/false);
    for (int64_t i = 0; i < nb; ++i)
      for (int64_t k = indptr[r0 + i]; k < indptr[r0 + i + 1]; ++k)
        xb[i * F + indices[k]] = std::numeric_limits<float>::quiet_NaN();
  }
}

extern "C" void JaxboostPredictCSR(const int64_t* indptr, const int32_t* indices,
                                   const float* data, int64_t F, const PredictNode* nodes,
                                   const uint8_t* flags, const float* value,
                                   const uint32_t* cat_bits, const int32_t* value_output,
                                   const int32_t* tree_depth, int64_t T, int64_t M, int64_t K,
                                   float* margin, int64_t row_begin, int64_t row_end) {
  if (cat_bits != nullptr) {
    PredictRowsCSR<true>(indptr, indices, data, F, nodes, flags, value, cat_bits, value_output,
                         tree_depth, T, M, K, margin, row_begin, row_end);
  } else {
    PredictRowsCSR<false>(indptr, indices, data, F, nodes, flags, value, cat_bits,
                          value_output, tree_depth, T, M, K, margin, row_begin, row_end);
  }
}

// Hands the scratch pool's idle blocks back to the system; returns their bytes.
extern "C" int64_t JaxboostReleaseScratch() { return ScratchPool::Get().Release(); }

// Version of the calling conventions above; the Python side checks it.

// ---- Vector-leaf split search (multi_output_tree) -------------------------------------
//
// The best split of each node of a level for vector leaves, as
// jaxboost.engine.split.find_best_vector_splits computes it in XLA (same candidates,
// order, validity rules and first-maximum tie rule), one candidate at a time with the
// K x K solve in registers: XLA's batched form rewrites whole (candidates, K, K) arrays
// at each of K steps, 10-30x slower at K = 10.
//
// Inputs:  S (F, n, B, C) float64 histograms (C = K + P channels: K gradients, then P
//          Hessian channels, P = K diagonal entries or the K (K + 1) / 2 upper-triangle
//          entries in row-major order); bin B - 1 (missing) is never a threshold.
//          Sp (n, C) float64 node totals; forward_ok (F,) bool; mask (n, F) bool;
//          hyper (4,) float64: lambda, alpha, min_child_weight, max_delta_step;
//          n_valid (F,) int32: feature f's rows lie in bins 0 .. n_valid[f] - 1 and
//          B - 1 (its bins in between are empty: never read).
// Outputs: gain (n,) float32 (-inf: no valid candidate), feature (n,) int32,
//          tbin (n,) int32, default_left (n,) bool; decoded as split.pick_best does.
// Attributes: K, diagonal, any_forward.
// Prefix sums run in bin order here (XLA's cumsum may associate them otherwise), so
// gains may differ from the XLA path in the last float64 bits.

namespace {

struct VecHyper {
  double lam, alpha, mcw, mds;
};

constexpr double kMaxCondition = 100.0;  // split.MAX_CONDITION
constexpr int kMaxK = 64;

// Lower Cholesky factor of the symmetric K x K matrix A (lower triangle read) into L;
// false when a pivot is not > 0 (or NaN), as smallmat.cholesky.
template <int KT>
inline bool Cholesky(const double* A, double* L, int K_) {
  const int K = KT > 0 ? KT : K_;
  for (int j = 0; j < K; ++j) {
    double d = A[j * K + j];
    for (int k = 0; k < j; ++k) d -= L[j * K + k] * L[j * K + k];
    if (!(d > 0)) return false;
    const double ljj = std::sqrt(d);
    L[j * K + j] = ljj;
    for (int i = j + 1; i < K; ++i) {
      double s = A[i * K + j];
      for (int k = 0; k < j; ++k) s -= L[i * K + k] * L[j * K + k];
      L[i * K + j] = s / ljj;
    }
  }
  return true;
}

// Whether H - floor I is certainly not positive semi-definite, from 1'(H - floor I)1 =
// total - K floor (total = sum_ij H_ij, total_abs = sum_ij |H_ij|; see VectorScore).
inline bool CholeskyMustFail(double total, double total_abs, double floor, double tr_abs,
                             int K) {
  return total - K * floor < -1e-9 * (total_abs + K * tr_abs);
}

// split.vector_weight_score's score and cover of one node from its channel sums.
//
// Where H's Gershgorin bound already clears the damping floor by a margin far above
// rounding (min_i H_ii - sum_{j != i} |H_ij| > floor + 1e-9 tr|H|), H - floor I is
// positive definite and its Cholesky test is skipped: it could only succeed. Where
// instead 1'(H - floor I)1 = sum_ij H_ij - K floor lies below zero by a margin far above
// rounding (sum_ij H_ij - K floor < -1e-9 (sum_ij |H_ij| + K tr|H|)), H - floor I is not
// positive semi-definite, and the test is skipped too: it could only fail (a Cholesky
// factor that completes is exact for a matrix within K^2 eps tr|H| of H - floor I).
// Softmax's H, whose rows sum to zero, is always of this kind.
// KT: K at compile time (0: read K at run time).
template <int KT>
inline void VectorScore(const double* Sc, int K_, bool diagonal, const VecHyper& hp,
                        double* score, double* cover) {
  const int K = KT > 0 ? KT : K_;
  double t[kMaxK], w[kMaxK];
  double A[kMaxK * kMaxK];  // H + lambda I (+ mu I where damped); the diagonal only
  for (int k = 0; k < K; ++k) t[k] = ThresholdL1(Sc[k], hp.alpha);
  const double* Hc = Sc + K;
  bool finite = true;
  double cov = 0.0;
  if (diagonal) {
    for (int k = 0; k < K; ++k) cov += Hc[k];
    for (int k = 0; k < K; ++k) {
      A[k] = Hc[k] + hp.lam;
      w[k] = A[k] > 0 ? -t[k] / A[k] : 0.0;
    }
  } else {
    double H[kMaxK * kMaxK], L[kMaxK * kMaxK];
    int c = 0;
    for (int i = 0; i < K; ++i)
      for (int j = i; j < K; ++j, ++c) H[i * K + j] = H[j * K + i] = Hc[c];
    double tr = 0.0, tr_abs = 0.0;
    for (int i = 0; i < K; ++i) {
      tr += H[i * K + i] + hp.lam;
      tr_abs += std::fabs(H[i * K + i]);
    }
    cov = tr - K * hp.lam;
    const double floor = tr_abs / (K * kMaxCondition);
    double low = std::numeric_limits<double>::infinity();
    double total = 0.0, total_abs = 0.0;  // sum_ij H_ij and sum_ij |H_ij|
    for (int i = 0; i < K; ++i) {
      double radius = 0.0;
      for (int j = 0; j < K; ++j) {
        radius += std::fabs(H[i * K + j]);
        total += H[i * K + j];
      }
      total_abs += radius;
      low = std::min(low, H[i * K + i] - (radius - std::fabs(H[i * K + i])));
    }
    bool damped = false;
    if (!(low - floor > 1e-9 * tr_abs)) {
      if (CholeskyMustFail(total, total_abs, floor, tr_abs, K)) {
        damped = true;
      } else {
        for (int i = 0; i < K * K; ++i) A[i] = H[i];
        for (int i = 0; i < K; ++i) A[i * K + i] -= floor;
        damped = !Cholesky<KT>(A, L, K);
      }
    }
    const double mu = damped ? floor + std::max(0.0, -low) : 0.0;
    for (int i = 0; i < K * K; ++i) A[i] = H[i];
    for (int i = 0; i < K; ++i) A[i * K + i] = (H[i * K + i] + hp.lam) + mu;
    if (Cholesky<KT>(A, L, K)) {
      double y[kMaxK];
      for (int j = 0; j < K; ++j) {
        double s = t[j];
        for (int k = 0; k < j; ++k) s -= L[j * K + k] * y[k];
        y[j] = s / L[j * K + j];
      }
      for (int j = K - 1; j >= 0; --j) {
        double s = y[j];
        for (int k = j + 1; k < K; ++k) s -= L[k * K + j] * (-w[k]);
        w[j] = -(s / L[j * K + j]);
      }
    } else {
      finite = false;  // smallmat's factor of NaN: w is NaN, the node not ok
    }
  }
  for (int k = 0; k < K && finite; ++k) {
    if (hp.mds > 0) w[k] = std::clamp(w[k], -hp.mds, hp.mds);
    finite = std::isfinite(w[k]);
  }
  *cover = cov;
  if (!(finite && cov > 0 && cov / K >= hp.mcw)) {  // mean Hessian over the outputs
    *score = 0.0;
    return;
  }
  double tw = 0.0, wAw = 0.0;
  for (int k = 0; k < K; ++k) tw += t[k] * w[k];
  for (int i = 0; i < K; ++i) {
    double aw = 0.0;
    if (diagonal) {
      aw = A[i] * w[i];
    } else {
      for (int j = 0; j < K; ++j) aw += A[i * K + j] * w[j];
    }
    wAw += w[i] * aw;
  }
  *score = -(2.0 * tw + wAw);
}

// VectorScore's cover of one node from its channel sums, by the same operations in the
// same order (so equal to the cover VectorScore returns, bit for bit): the sum of the
// Hessian's diagonal, for a full Hessian as (sum_i (H_ii + lambda)) - K lambda.
template <int KT>
inline double VectorCover(const double* Sc, int K_, bool diagonal, double lam) {
  const int K = KT > 0 ? KT : K_;
  const double* Hc = Sc + K;
  double cov = 0.0;
  if (diagonal) {
    for (int k = 0; k < K; ++k) cov += Hc[k];
    return cov;
  }
  for (int i = 0, c = 0; i < K; c += K - i, ++i) cov += Hc[c] + lam;  // c: (i, i)
  return cov - K * lam;
}

// VectorScore of kLanes candidates at once, for a full K x K Hessian with K = KT known
// at compile time (1..12): lane l's channel sums at sums[l]. Each lane runs
// VectorScore's operations in VectorScore's order (the lanes are independent, so the
// loops over them vectorise and their dependency chains overlap), so a lane's score and
// cover equal VectorScore's bit for bit. A lane whose Cholesky pivot fails carries on
// with values it does not use (its square roots taken of 1, not of the failed pivot).
constexpr int kLanes = 4;
constexpr int64_t kBinsAhead = 2;  // bins prefetched ahead in the split search

template <int KT>
inline void CholeskyLanes(const double (*A)[kLanes], double (*L)[kLanes], bool* ok) {
  constexpr int K = KT;
  for (int l = 0; l < kLanes; ++l) ok[l] = true;
  for (int j = 0; j < K; ++j) {
    double d[kLanes], ljj[kLanes];
    for (int l = 0; l < kLanes; ++l) d[l] = A[j * K + j][l];
    for (int k = 0; k < j; ++k)
      for (int l = 0; l < kLanes; ++l) d[l] -= L[j * K + k][l] * L[j * K + k][l];
    for (int l = 0; l < kLanes; ++l) {
      const bool pos = d[l] > 0;
      ok[l] = ok[l] && pos;
      ljj[l] = std::sqrt(pos ? d[l] : 1.0);
      L[j * K + j][l] = ljj[l];
    }
    for (int i = j + 1; i < K; ++i) {
      double sum[kLanes];
      for (int l = 0; l < kLanes; ++l) sum[l] = A[i * K + j][l];
      for (int k = 0; k < j; ++k)
        for (int l = 0; l < kLanes; ++l) sum[l] -= L[i * K + k][l] * L[j * K + k][l];
      for (int l = 0; l < kLanes; ++l) L[i * K + j][l] = sum[l] / ljj[l];
    }
  }
}

template <int KT>
void VectorScoreLanes(const double* const* sums, const VecHyper& hp, double* score,
                      double* cover) {
  constexpr int K = KT;
  constexpr int W = kLanes;
  double t[K][W], w[K][W], y[K][W];
  double H[K * K][W], A[K * K][W], L[K * K][W];
  for (int k = 0; k < K; ++k)
    for (int l = 0; l < W; ++l) t[k][l] = ThresholdL1(sums[l][k], hp.alpha);
  for (int i = 0, c = 0; i < K; ++i)
    for (int j = i; j < K; ++j, ++c)
      for (int l = 0; l < W; ++l) H[i * K + j][l] = H[j * K + i][l] = sums[l][K + c];
  double tr[W], tr_abs[W], cov[W], flo[W], low[W], total[W] = {}, total_abs[W] = {};
  for (int l = 0; l < W; ++l) {
    tr[l] = 0.0;
    tr_abs[l] = 0.0;
  }
  for (int i = 0; i < K; ++i)
    for (int l = 0; l < W; ++l) {
      tr[l] += H[i * K + i][l] + hp.lam;
      tr_abs[l] += std::fabs(H[i * K + i][l]);
    }
  for (int l = 0; l < W; ++l) {
    cov[l] = tr[l] - K * hp.lam;
    flo[l] = tr_abs[l] / (K * kMaxCondition);
    low[l] = std::numeric_limits<double>::infinity();
  }
  for (int i = 0; i < K; ++i) {
    double radius[W] = {};
    for (int j = 0; j < K; ++j)
      for (int l = 0; l < W; ++l) {
        radius[l] += std::fabs(H[i * K + j][l]);
        total[l] += H[i * K + j][l];
      }
    for (int l = 0; l < W; ++l) {
      total_abs[l] += radius[l];
      low[l] = std::min(low[l], H[i * K + i][l] - (radius[l] - std::fabs(H[i * K + i][l])));
    }
  }
  bool need[W], fails[W], damped[W] = {}, ok[W];
  bool any_test = false;
  for (int l = 0; l < W; ++l) {
    need[l] = !(low[l] - flo[l] > 1e-9 * tr_abs[l]);
    fails[l] = CholeskyMustFail(total[l], total_abs[l], flo[l], tr_abs[l], K);
    damped[l] = need[l] && fails[l];
    any_test = any_test || (need[l] && !fails[l]);
  }
  if (any_test) {
    for (int i = 0; i < K * K; ++i)
      for (int l = 0; l < W; ++l) A[i][l] = H[i][l];
    for (int i = 0; i < K; ++i)
      for (int l = 0; l < W; ++l) A[i * K + i][l] -= flo[l];
    CholeskyLanes<K>(A, L, ok);
    for (int l = 0; l < W; ++l) damped[l] = damped[l] || (need[l] && !ok[l]);
  }
  for (int i = 0; i < K * K; ++i)
    for (int l = 0; l < W; ++l) A[i][l] = H[i][l];
  for (int i = 0; i < K; ++i)
    for (int l = 0; l < W; ++l) {
      const double mu = damped[l] ? flo[l] + std::max(0.0, -low[l]) : 0.0;
      A[i * K + i][l] = (H[i * K + i][l] + hp.lam) + mu;
    }
  CholeskyLanes<K>(A, L, ok);
  for (int j = 0; j < K; ++j) {
    double sum[W];
    for (int l = 0; l < W; ++l) sum[l] = t[j][l];
    for (int k = 0; k < j; ++k)
      for (int l = 0; l < W; ++l) sum[l] -= L[j * K + k][l] * y[k][l];
    for (int l = 0; l < W; ++l) y[j][l] = sum[l] / L[j * K + j][l];
  }
  for (int j = K - 1; j >= 0; --j) {
    double sum[W];
    for (int l = 0; l < W; ++l) sum[l] = y[j][l];
    for (int k = j + 1; k < K; ++k)
      for (int l = 0; l < W; ++l) sum[l] -= L[k * K + j][l] * (-w[k][l]);
    for (int l = 0; l < W; ++l) w[j][l] = -(sum[l] / L[j * K + j][l]);
  }
  bool finite[W];
  for (int l = 0; l < W; ++l) finite[l] = ok[l];
  for (int k = 0; k < K; ++k)
    for (int l = 0; l < W; ++l) {
      if (!finite[l]) continue;
      if (hp.mds > 0) w[k][l] = std::clamp(w[k][l], -hp.mds, hp.mds);
      finite[l] = std::isfinite(w[k][l]);
    }
  double tw[W] = {}, wAw[W] = {};
  for (int k = 0; k < K; ++k)
    for (int l = 0; l < W; ++l) tw[l] += t[k][l] * w[k][l];
  for (int i = 0; i < K; ++i) {
    double aw[W] = {};
    for (int j = 0; j < K; ++j)
      for (int l = 0; l < W; ++l) aw[l] += A[i * K + j][l] * w[j][l];
    for (int l = 0; l < W; ++l) wAw[l] += w[i][l] * aw[l];
  }
  for (int l = 0; l < W; ++l) {
    cover[l] = cov[l];
    const bool used = finite[l] && cov[l] > 0 && cov[l] / K >= hp.mcw;
    score[l] = used ? -(2.0 * tw[l] + wAw[l]) : 0.0;
  }
}

// Asks for the C doubles at b ahead of their use (the histogram is read once, bin by
// bin, and is larger than the caches at deep levels).
inline void PrefetchBin(const double* b, int64_t C) {
  const char* p = reinterpret_cast<const char*>(b);
  for (int64_t o = 0; o < C * static_cast<int64_t>(sizeof(double)); o += 64)
    __builtin_prefetch(p + o);
}

inline bool IsEmptyBin(const double* b, int64_t C) {
  for (int64_t c = 0; c < C; ++c)
    if (b[c] != 0.0) return false;
  return true;
}

ffi::Error VectorSplitsImpl(ffi::ThreadPool thread_pool, ffi::Buffer<ffi::F64> S,
                            ffi::Buffer<ffi::F64> Sp, ffi::Buffer<ffi::PRED> forward_ok,
                            ffi::Buffer<ffi::PRED> mask, ffi::Buffer<ffi::F64> hyper,
                            ffi::Buffer<ffi::S32> n_valid, ffi::ResultBuffer<ffi::F32> gain, ffi::ResultBuffer<ffi::S32> feature,
                            ffi::ResultBuffer<ffi::S32> tbin,
                            ffi::ResultBuffer<ffi::PRED> default_left, int64_t K_,
                            bool diagonal, bool any_forward, int64_t n_threads) {
  const auto sd = S.dimensions();
  if (sd.size() != 4)
    return ffi::Error::InvalidArgument("jaxboost_vector_splits: S must be (F, n, B, C)");
  const int64_t F = sd[0], n = sd[1], B = sd[2], C = sd[3];
  const int K = static_cast<int>(K_);
  if (K < 1 || K > kMaxK)
    return ffi::Error::InvalidArgument("jaxboost_vector_splits: K must be in [1, 64]");
  if (C != K + (diagonal ? K : K * (K + 1) / 2))
    return ffi::Error::InvalidArgument("jaxboost_vector_splits: C does not match K");
  if (B < 2) return ffi::Error::InvalidArgument("jaxboost_vector_splits: B must be >= 2");
  if (n_threads < 1 || n_threads > 4096)
    return ffi::Error::InvalidArgument("jaxboost_vector_splits: n_threads must be in [1, 4096]");
  if (Sp.element_count() != n * C || forward_ok.element_count() != F ||
      mask.element_count() != n * F || hyper.element_count() != 4 ||
      n_valid.element_count() != F ||
      gain->element_count() != n || feature->element_count() != n ||
      tbin->element_count() != n || default_left->element_count() != n)
    return ffi::Error::InvalidArgument("jaxboost_vector_splits: argument shapes disagree");
  const double* s = S.typed_data();
  const double* sp = Sp.typed_data();
  const bool* fok = forward_ok.typed_data();
  const bool* msk = mask.typed_data();
  const int32_t* nval = n_valid.typed_data();
  const VecHyper hp{hyper.typed_data()[0], hyper.typed_data()[1], hyper.typed_data()[2],
                    hyper.typed_data()[3]};
  const int64_t V = B - 1;
  const int64_t per_feature = any_forward ? 2 * V : V;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  std::vector<double> parent(n);
  for (int64_t i = 0; i < n; ++i) {
    double cover;
    VectorScore<0>(sp + i * C, K, diagonal, hp, &parent[i], &cover);
  }
  // Each (node, feature) pair's first best candidate, on any thread; then per node the
  // first best over features in order: the same pick for every thread count.
  std::vector<float> pair_gain(n * F, neg_inf);
  std::vector<int64_t> pair_idx(n * F, 0);
  // The search with K known at compile time up to 12 (kt: its std::integral_constant;
  // 0: K read at run time); with a full Hessian, candidates are scored kLanes at a time
  // (VectorScoreLanes), and taken in their order as one by one.
  auto search_all = [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    constexpr int kCap = KT > 0 ? KT + KT * (KT + 1) / 2 : kMaxK + kMaxK * (kMaxK + 1) / 2;
    const bool by_lanes = !diagonal;  // with KT > 0
    auto search = [&](int64_t item, int64_t) {
      const int64_t i = item / F, f = item % F;
      if (!msk[i * F + f]) return;  // every candidate -inf
      const double* P = sp + i * C;
      const double* hist = s + (f * n + i) * B * C;
      const int64_t base = f * per_feature;
      // Bins at and past Vf (up to the missing bin) hold no rows of this feature.
      const int64_t Vf = std::clamp<int64_t>(nval[f], 0, V);
      double L[kCap], R[kCap];
      float best = neg_inf;
      int64_t best_idx = base;
      // A candidate's gain, taken if it beats the best so far (consider let through
      // only candidates whose sides both have the cover).
      auto take = [&](double sl, double sr, int64_t idx) {
        float g = static_cast<float>(sl + sr - parent[i]);
        if (std::isnan(g)) g = neg_inf;
        if (g > best) {
          best = g;
          best_idx = idx;
        }
      };
      constexpr int kLaneCap = KT > 0 ? kCap : 1;  // no lanes for K read at run time
      double lane_l[kLanes][kLaneCap], lane_r[kLanes][kLaneCap];
      int64_t lane_idx[kLanes];
      int queued = 0;
      auto flush = [&]() {
        if (queued == 0) return;
        const double* ls[kLanes];
        const double* rs[kLanes];
        for (int l = 0; l < kLanes; ++l) {  // idle lanes score the last candidate again
          ls[l] = lane_l[std::min(l, queued - 1)];
          rs[l] = lane_r[std::min(l, queued - 1)];
        }
        double sl[kLanes], cl[kLanes], sr[kLanes], cr[kLanes];
        if constexpr (KT > 0) {
          VectorScoreLanes<KT>(ls, hp, sl, cl);
          VectorScoreLanes<KT>(rs, hp, sr, cr);
        }
        for (int l = 0; l < queued; ++l) take(sl[l], sr[l], lane_idx[l]);
        queued = 0;
      };
      auto consider = [&](int64_t idx) {
        // A candidate whose side has too little cover is invalid whatever its score
        // (the cover VectorScore would return, by its operations): not scored.
        const double cov_l = VectorCover<KT>(L, K, diagonal, hp.lam);
        const double cov_r = VectorCover<KT>(R, K, diagonal, hp.lam);
        if (!(cov_l / K >= hp.mcw && cov_r / K >= hp.mcw && cov_l > 0 && cov_r > 0)) return;
        if constexpr (KT > 0) {
          if (by_lanes) {
            std::copy(L, L + C, lane_l[queued]);
            std::copy(R, R + C, lane_r[queued]);
            lane_idx[queued] = idx;
            if (++queued == kLanes) flush();
            return;
          }
        }
        double sl, cl, sr, cr;
        VectorScore<KT>(L, K, diagonal, hp, &sl, &cl);
        VectorScore<KT>(R, K, diagonal, hp, &sr, &cr);
        take(sl, sr, idx);
      };
      // A bin without rows (every channel 0) leaves the sums, hence the gain, as they
      // were at the candidate before it, which cannot then be beaten strictly: skipped
      // (a pass's first candidate, with one side empty, has cover 0 and is invalid).
      // Bins Vf .. V - 1 are such bins by construction: not even read.
      if (any_forward && fok[f]) {  // pass A: bins < t go left, missing right
        std::fill(L, L + C, 0.0);
        for (int64_t j = 0; j < Vf; ++j) {
          const double* b = hist + j * C;
          if (j + kBinsAhead < Vf) PrefetchBin(b + kBinsAhead * C, C);
          if (IsEmptyBin(b, C)) continue;
          for (int64_t c = 0; c < C; ++c) {
            L[c] += b[c];
            R[c] = P[c] - L[c];
          }
          consider(base + j);
        }
        flush();
      }
      // pass B: index j is threshold V - 1 - j; bins >= it go right, missing left
      std::fill(R, R + C, 0.0);
      for (int64_t j = V - Vf; j < V; ++j) {
        const double* b = hist + (V - 1 - j) * C;
        if (V - 1 - j - kBinsAhead >= 0) PrefetchBin(b - kBinsAhead * C, C);
        if (IsEmptyBin(b, C)) continue;
        for (int64_t c = 0; c < C; ++c) {
          R[c] += b[c];
          L[c] = P[c] - R[c];
        }
        consider(base + (any_forward ? V : 0) + j);
      }
      flush();
      pair_gain[item] = best;
      pair_idx[item] = best_idx;
    };
    // XLA's intra-op pool when the runtime has one, else std::threads
    ffi::ThreadPool* pool = thread_pool.num_threads() > 0 ? &thread_pool : nullptr;
    ParallelFor(pool, n_threads, n * F, search);
  };
  switch (K) {  // K unrolled up to 12
    case 1: search_all(std::integral_constant<int, 1>{}); break;
    case 2: search_all(std::integral_constant<int, 2>{}); break;
    case 3: search_all(std::integral_constant<int, 3>{}); break;
    case 4: search_all(std::integral_constant<int, 4>{}); break;
    case 5: search_all(std::integral_constant<int, 5>{}); break;
    case 6: search_all(std::integral_constant<int, 6>{}); break;
    case 7: search_all(std::integral_constant<int, 7>{}); break;
    case 8: search_all(std::integral_constant<int, 8>{}); break;
    case 9: search_all(std::integral_constant<int, 9>{}); break;
    case 10: search_all(std::integral_constant<int, 10>{}); break;
    case 11: search_all(std::integral_constant<int, 11>{}); break;
    case 12: search_all(std::integral_constant<int, 12>{}); break;
    default: search_all(std::integral_constant<int, 0>{}); break;
  }
  for (int64_t i = 0; i < n; ++i) {
    float best = neg_inf;
    int64_t best_idx = 0;
    for (int64_t f = 0; f < F; ++f) {
      if (pair_gain[i * F + f] > best) {
        best = pair_gain[i * F + f];
        best_idx = pair_idx[i * F + f];
      }
    }
    const int64_t j = best_idx % per_feature + (any_forward ? 0 : V);
    const bool left = j >= V;
    gain->typed_data()[i] = best;
    feature->typed_data()[i] = static_cast<int32_t>(best_idx / per_feature);
    tbin->typed_data()[i] = static_cast<int32_t>(left ? 2 * V - 1 - j : j + 1);
    default_left->typed_data()[i] = left;
  }
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(JaxboostVectorSplits, VectorSplitsImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()         // XLA:CPU intra-op pool
                                  .Arg<ffi::Buffer<ffi::F64>>()   // S (F, n, B, C)
                                  .Arg<ffi::Buffer<ffi::F64>>()   // Sp (n, C)
                                  .Arg<ffi::Buffer<ffi::PRED>>()  // forward_ok (F,)
                                  .Arg<ffi::Buffer<ffi::PRED>>()  // mask (n, F)
                                  .Arg<ffi::Buffer<ffi::F64>>()   // hyper (4,)
                                  .Arg<ffi::Buffer<ffi::S32>>()   // n_valid (F,)
                                  .Ret<ffi::Buffer<ffi::F32>>()   // gain (n,)
                                  .Ret<ffi::Buffer<ffi::S32>>()   // feature (n,)
                                  .Ret<ffi::Buffer<ffi::S32>>()   // tbin (n,)
                                  .Ret<ffi::Buffer<ffi::PRED>>()  // default_left (n,)
                                  .Attr<int64_t>("K")
                                  .Attr<bool>("diagonal")
                                  .Attr<bool>("any_forward")
                                  .Attr<int64_t>("n_threads"));

extern "C" int JaxboostHistogramAbiVersion() { return 17; }
