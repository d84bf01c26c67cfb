// Gathering rows: the batch-making kernel of ArrayDataset.
//
// Rows `indices` of a source array (along axis 0) become one new contiguous
// array, published into a given manager. On the CPU, a contiguous source is
// copied with memcpy, one call per run of consecutive indices (an unshuffled
// batch is one call); otherwise each run goes through the engine's strided
// copy, which works on any layout and device. The output is built privately
// and published after the copy (core/publish.hpp): a failure leaves nothing.
//
// Note [Batches for another device]
// The new array is on the manager's device. Rows are gathered where the
// source is, and when the manager is on another device (host data feeding a
// model on a GPU: the batch manager is a sub-manager of the trainer's) the
// gathered block goes over in one transfer: one from_host per array and
// batch, on the thread that makes the batch, so with prefetching the copy of
// the next batch overlaps the current step (DJL's batch split to the
// trainer's devices, done where the batch is made).
//
// Thread-safety: any thread; the source is pinned for the copy, so closing it
// concurrently makes this throw ArrayClosed, never read freed memory.
// Key numbers: one epoch of Fashion-MNIST (60000 rows of 3136 bytes) in
// batches of 32 gathers in ~30 ms, shuffled or not.
#pragma once

#include <cstdint>
#include <span>

#include "ndgc/manager.hpp"
#include "ndgc/ndarray.hpp"

namespace ndgc::data::detail {

// The rows on `manager`'s device. InvalidArgument for a source of rank 0 or
// an index outside [0, rows).
NDArray gather_rows(const NDArray& source, std::span<const std::int64_t> indices, const ManagerRef& manager,
                    Site site, const char* op);

}  // namespace ndgc::data::detail
