//===- Interpreter.cpp - execute `tile` IR over the grid ------------------===//
#include "compiler/interp/Interpreter.h"
#include "tegula/interrupt.h"
#include "tegula/print.h"

#include "compiler/interp/Elementwise.h"
#include "compiler/interp/InlineAsm.h"
#include "compiler/interp/Promises.h"
#include "compiler/interp/Tile.h"
#include "compiler/SourceLine.h"
#include "runtime/DeviceErrorReport.h"
#include "dialects/tile/TileDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>

using namespace mlir;

namespace tegula::interp {
namespace {

std::string locString(Location loc) {
  if (auto f = dyn_cast<FileLineColLoc>(loc))
    return fmt::format("{}:{}", f.getFilename().str(), f.getLine());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto s = locString(inner); s != "<unknown>")
        return s;
  if (auto name = dyn_cast<NameLoc>(loc))
    return locString(name.getChildLoc());
  if (auto cs = dyn_cast<CallSiteLoc>(loc))
    return locString(cs.getCaller());
  return "<unknown>";
}

/// The coordinates of row-major element `flat` of a tile of `shape`.
std::vector<int64_t> unflatten(const std::vector<int64_t> &shape, size_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = int64_t(flat) % shape[d];
    flat /= size_t(shape[d]);
  }
  return idx;
}

std::string indexString(const std::vector<int64_t> &shape, size_t flat) {
  if (shape.empty())
    return "scalar";
  const std::vector<int64_t> idx = unflatten(shape, flat);
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d)
    s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

struct Buffer {
  char *data;
  size_t bytes;
  DType dtype;
  bool readonly;
  std::string name;
};

size_t storageSize(Type t) { return t.isInteger(1) ? 1 : t.getIntOrFloatBitWidth() / 8; }

/// Round an f32 to tf32 (10 explicit mantissa bits, nearest, ties to even).
double toTF32(double x) { return round_to_tf32(float(x)); }

class Interpreter {
public:
  Interpreter(const Launch &launch) : launch_(launch) {}

  void run(func::FuncOp fn) {
    const auto &args = *launch_.args;
    for (size_t k = 0; k < args.size(); ++k)
      buffers_.push_back(Buffer{static_cast<char *>(args[k].data()), args[k].bytes(),
                                args[k].dtype(), args[k].readonly(), launch_.paramNames[k]});
    Grid g = launch_.grid;
    for (pid_[2] = 0; pid_[2] < g.z; ++pid_[2])
      for (pid_[1] = 0; pid_[1] < g.y; ++pid_[1])
        for (pid_[0] = 0; pid_[0] < g.x; ++pid_[0]) {
          checkInterrupt();
          env_.clear();
          descs_.clear();
          if (pid_[0] % uint32_t(launch_.clusterSize) == 0)
            clusterLoads_.clear();
          multicastLoads_ = 0;
          Block &entry = fn.getBody().front();
          for (auto [k, barg] : llvm::enumerate(entry.getArguments()))
            env_[barg] = argumentTile(barg.getType(), launch_.argIndex[k]);
          execBlock(entry);
          checkClusterMadeAllLoads();
        }
  }

private:
  const Launch &launch_;
  std::vector<Buffer> buffers_;
  uint32_t pid_[3] = {0, 0, 0};
  llvm::DenseMap<Value, TileRef> env_;
  /// A tensor descriptor: its base pointer, extents and strides (elements).
  struct Descriptor {
    int32_t buf;
    int64_t offset;
    std::vector<int64_t> shape, strides;
  };
  llvm::DenseMap<Value, Descriptor> descs_;
  /// tl::multicast loads of the cluster's first program (op, tensor base,
  /// block offsets), which its other programs must repeat in order; and how
  /// many the current program has made.
  struct MulticastLoad {
    Operation *op;
    int32_t buf;
    int64_t base;
    std::vector<int64_t> at;
  };
  std::vector<MulticastLoad> clusterLoads_;
  size_t multicastLoads_ = 0;

  /// A tl::multicast load of the block at `at`: the cluster's first program
  /// records it, the others must make the same one.
  void checkMulticast(Operation *op, const Descriptor &d, const std::vector<int64_t> &at) {
    if (launch_.clusterSize == 1)
      return;
    const uint32_t rank = pid_[0] % uint32_t(launch_.clusterSize), first = pid_[0] - rank;
    const size_t n = multicastLoads_++;
    if (rank == 0) {
      clusterLoads_.push_back({op, d.buf, d.offset, at});
      return;
    }
    if (n >= clusterLoads_.size())
      error(op, fmt::format("tl::multicast load #{} of program {}, but program {} (the first of its cluster of "
                            "{}) made only {}: the programs of a cluster must make the same multicast loads",
                            n + 1, pid_[0], first, launch_.clusterSize, clusterLoads_.size()));
    const MulticastLoad &theirs = clusterLoads_[n];
    if (theirs.op != op || theirs.buf != d.buf || theirs.base != d.offset || theirs.at != at)
      error(op, fmt::format("tl::multicast load #{} reads the block at [{}]{}, but program {} (the first of its "
                            "cluster of {}) read the block at [{}] at {} as its load #{}: the programs of a cluster "
                            "must load the same blocks in the same order",
                            n + 1, fmt::join(at, ", "),
                            theirs.buf != d.buf || theirs.base != d.offset ? " of another tensor" : "", first,
                            launch_.clusterSize, fmt::join(theirs.at, ", "), locString(theirs.op->getLoc()), n + 1));
  }

  /// After a program of a cluster other than its first: it made all the
  /// first one's multicast loads.
  void checkClusterMadeAllLoads() {
    if (launch_.clusterSize == 1 || pid_[0] % uint32_t(launch_.clusterSize) == 0 ||
        multicastLoads_ == clusterLoads_.size())
      return;
    error(clusterLoads_[multicastLoads_].op,
          fmt::format("program {} made {} tl::multicast loads, but the first program of its cluster of {} made "
                      "{}: the programs of a cluster must make the same multicast loads",
                      pid_[0], multicastLoads_, launch_.clusterSize, clusterLoads_.size()));
  }

  [[noreturn]] void error(Operation *op, const std::string &what) {
    throw Error(fmt::format("{}: {} at {}: program ({}, {}, {})", launch_.kernelName, what,
                            locString(op->getLoc()), pid_[0], pid_[1], pid_[2]));
  }

  TileRef argumentTile(Type type, size_t argIdx) {
    const Arg &a = (*launch_.args)[argIdx];
    auto t = makeTile(type, {});
    if (isa<tile::PtrType>(type)) {
      t->buf[0] = int32_t(argIdx);
      t->i[0] = 0;
    } else if (isa<FloatType>(type)) {
      t->f[0] = roundTo(type, a.as_float());
    } else {
      // Launch checks ranges; a bool is any nonzero value, as in C++.
      t->i[0] = type.isInteger(1) ? a.as_int() != 0 : wrapTo(type, a.as_int());
    }
    return t;
  }

  const TileRef &get(Value v) {
    auto it = env_.find(v);
    assert(it != env_.end() && "value not computed");
    return it->second;
  }

  /// Execute a block; returns the terminator's operand tiles.
  SmallVector<TileRef> execBlock(Block &block) {
    for (Operation &op : block) {
      if (op.hasTrait<OpTrait::IsTerminator>()) {
        SmallVector<TileRef> out;
        for (Value v : op.getOperands())
          out.push_back(get(v));
        return out;
      }
      exec(&op);
    }
    return {};
  }

  void exec(Operation *op) {
    if (isa<tile::MakeTensorDescriptorOp, tile::DescriptorLoadOp, tile::DescriptorStoreOp>(op))
      return execDescriptorOp(op);
    SmallVector<TileRef> in;
    if (!isa<scf::ForOp, scf::WhileOp, scf::IfOp, tile::ReduceOp, tile::ScanOp>(op))
      for (Value v : op->getOperands())
        in.push_back(get(v));
    if (auto r = evalElementwise(op, in)) {
      env_[op->getResult(0)] = *r;
      return;
    }
    llvm::TypeSwitch<Operation *>(op)
        .Case([&](arith::ConstantOp c) { env_[c] = constant(c); })
        .Case([&](tile::ProgramIdOp p) { env_[p] = scalarInt(p.getType(), pid_[int(p.getAxis())]); })
        .Case([&](tile::ClusterSizeOp c) { env_[c] = scalarInt(c.getType(), launch_.clusterSize); })
        .Case([&](tile::NumProgramsOp p) {
          Grid g = launch_.grid;
          uint32_t n[3] = {g.x, g.y, g.z};
          env_[p] = scalarInt(p.getType(), n[int(p.getAxis())]);
        })
        .Case([&](tile::MakeRangeOp r) {
          int64_t start = int32_t(r.getStart()); // I32Attr getters are unsigned
          auto t = makeTile(r.getType().getElementType(), {r.getType().getDimSize(0)});
          for (size_t k = 0; k < t->i.size(); ++k)
            t->i[k] = start + int64_t(k);
          env_[r] = t;
        })
        .Case([&](tile::SplatOp s) { env_[s] = splat(*in[0], s.getType().getShape()); })
        .Case([&](tile::BroadcastOp b) { env_[b] = broadcast(*in[0], b.getType().getShape()); })
        .Case<tile::ExpandDimsOp, tile::ReshapeOp>([&](auto r) {
          auto t = std::make_shared<Tile>(*in[0]);
          auto shape = cast<RankedTensorType>(r.getType()).getShape();
          t->shape.assign(shape.begin(), shape.end());
          env_[r] = t;
        })
        .Case([&](tile::TransOp t) { env_[t] = transpose(*in[0], t.getOrder(), t.getType().getShape()); })
        .Case([&](tile::GatherOp g) { env_[g] = gatherAlong(g, *in[0], *in[1]); })
        .Case([&](tile::HistogramOp h) {
          auto counts = makeTile(h.getType().getElementType(), {h.getType().getDimSize(0)});
          for (int64_t v : in[0]->i)
            if (v >= 0 && v < int64_t(counts->i.size()))
              ++counts->i[size_t(v)];
          env_[h] = counts;
        })
        .Case([&](tile::AddPtrOp a) {
          auto t = std::make_shared<Tile>(*in[0]);
          size_t esz = storageSize(cast<tile::PtrType>(tile::getElementTypeOrSelf(a.getType()))
                                       .getPointeeType());
          for (size_t k = 0; k < t->i.size(); ++k)
            t->i[k] += in[1]->i[k] * int64_t(esz);
          env_[a] = t;
        })
        .Case([&](tile::LoadOp l) { env_[l] = load(l, in); })
        .Case([&](tile::StoreOp s) { store(s, in); })
        .Case([&](tile::AtomicRMWOp a) { env_[a] = atomicRMW(a, in); })
        .Case([&](tile::AtomicCASOp a) { env_[a] = atomicCAS(a, in); })
        .Case([&](tile::DotOp d) { env_[d] = dot(d, in); })
        .Case([&](tile::ReduceOp r) { reduce(r); })
        .Case([&](tile::ScanOp r) { scan(r); })
        .Case([&](tile::PrintOp p) { print(p, in); })
        .Case([&](tile::AssertOp a) { assertOp(a, *in[0]); })
        .Case([&](tile::DebugBarrierOp) {}) // the program runs as one thread here
        .Case([&](tile::AssumeOp a) {
          if (auto broken = brokenPromise(a, *in[0]))
            error(a, *broken);
          env_[a] = in[0];
        })
        .Case([&](tile::ElementwiseInlineAsmOp a) {
          std::vector<TileRef> results;
          try {
            results = evalInlineAsm(a, in);
          } catch (const Error &e) {
            error(a, e.what());
          }
          for (auto [value, tile] : llvm::zip(a.getResults(), results))
            env_[value] = tile;
        })
        .Case([&](scf::ForOp f) { forLoop(f); })
        .Case([&](scf::WhileOp w) { whileLoop(w); })
        .Case([&](scf::IfOp i) { ifOp(i); })
        .Default([&](Operation *o) {
          error(o, fmt::format("the interpreter does not support '{}'",
                               o->getName().getStringRef().str()));
        });
  }

  TileRef scalarInt(Type t, int64_t v) {
    auto r = makeTile(t, {});
    r->i[0] = wrapTo(t, v);
    return r;
  }

  TileRef constant(arith::ConstantOp c) {
    Attribute attr = c.getValue();
    Type type = c.getType();
    Type elem = tile::getElementTypeOrSelf(type);
    std::vector<int64_t> shape;
    if (auto tt = dyn_cast<RankedTensorType>(type))
      shape.assign(tt.getShape().begin(), tt.getShape().end());
    auto t = makeTile(elem, shape);
    auto setFrom = [&](size_t k, Attribute a) {
      if (auto f = dyn_cast<FloatAttr>(a))
        t->f[k] = roundTo(elem, f.getValueAsDouble());
      else if (auto i = dyn_cast<IntegerAttr>(a))
        t->i[k] = elem.isInteger(1) ? int64_t(i.getValue().getZExtValue())
                                    : i.getValue().getSExtValue();
    };
    if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
      if (dense.isSplat()) {
        setFrom(0, dense.getSplatValue<Attribute>());
        for (size_t k = 1; k < t->size(); ++k) {
          if (t->kind == Tile::Kind::Float) t->f[k] = t->f[0];
          else t->i[k] = t->i[0];
        }
      } else {
        size_t k = 0;
        for (Attribute a : dense.getValues<Attribute>())
          setFrom(k++, a);
      }
    } else {
      setFrom(0, attr);
    }
    return t;
  }

  TileRef splat(const Tile &s, ArrayRef<int64_t> shape) {
    auto t = makeTile(s.elem, std::vector<int64_t>(shape.begin(), shape.end()));
    if (t->kind == Tile::Kind::Float)
      std::fill(t->f.begin(), t->f.end(), s.f[0]);
    else
      std::fill(t->i.begin(), t->i.end(), s.i[0]);
    if (t->kind == Tile::Kind::Ptr)
      std::fill(t->buf.begin(), t->buf.end(), s.buf[0]);
    return t;
  }

  /// Map each destination element to a source element through `srcIndex`.
  template <typename F>
  TileRef gather(const Tile &s, ArrayRef<int64_t> shape, F srcIndex) {
    auto t = makeTile(s.elem, std::vector<int64_t>(shape.begin(), shape.end()));
    std::vector<int64_t> idx(shape.size(), 0);
    for (size_t k = 0; k < t->size(); ++k) {
      size_t from = srcIndex(idx);
      if (t->kind == Tile::Kind::Float) t->f[k] = s.f[from];
      else t->i[k] = s.i[from];
      if (t->kind == Tile::Kind::Ptr) t->buf[k] = s.buf[from];
      for (size_t d = shape.size(); d-- > 0;) { // row-major increment
        if (++idx[d] < shape[d])
          break;
        idx[d] = 0;
      }
    }
    return t;
  }

  TileRef broadcast(const Tile &s, ArrayRef<int64_t> shape) {
    return gather(s, shape, [&](const std::vector<int64_t> &idx) {
      size_t from = 0;
      for (size_t d = 0; d < idx.size(); ++d)
        from = from * size_t(s.shape[d]) + size_t(s.shape[d] == 1 ? 0 : idx[d]);
      return from;
    });
  }

  TileRef transpose(const Tile &s, ArrayRef<int32_t> order, ArrayRef<int64_t> shape) {
    return gather(s, shape, [&](const std::vector<int64_t> &idx) {
      std::vector<int64_t> src(idx.size());
      for (size_t d = 0; d < idx.size(); ++d)
        src[order[d]] = idx[d];
      size_t from = 0;
      for (size_t d = 0; d < src.size(); ++d)
        from = from * size_t(s.shape[d]) + size_t(src[d]);
      return from;
    });
  }

  /// tile.gather: element idx of the result is src's at idx with the
  /// axis coordinate replaced by index's element idx (checked).
  TileRef gatherAlong(tile::GatherOp op, const Tile &src, const Tile &index) {
    const size_t axis = size_t(op.getAxis());
    return gather(src, index.shape, [&](const std::vector<int64_t> &idx) {
      size_t k = 0, from = 0;
      for (size_t d = 0; d < idx.size(); ++d)
        k = k * size_t(index.shape[d]) + size_t(idx[d]);
      const int64_t at = index.i[k];
      if (at < 0 || at >= src.shape[axis])
        throw Error(fmt::format("{}: tl::gather index {} is outside [0, {}) along axis {} (program ({}, {}, {}))",
                                locString(op->getLoc()), at, src.shape[axis], axis, pid_[0], pid_[1], pid_[2]));
      for (size_t d = 0; d < idx.size(); ++d)
        from = from * size_t(src.shape[d]) + size_t(d == axis ? at : idx[d]);
      return from;
    });
  }

  /// The address of element k of a pointer tile, checked against its buffer.
  char *address(Operation *op, const Tile &ptrs, size_t k, Type pointee, const char *verb) {
    int32_t b = ptrs.buf[k];
    int64_t off = ptrs.i[k];
    const Buffer &buf = buffers_[size_t(b)];
    size_t esz = storageSize(pointee);
    int64_t count = int64_t(buf.bytes / esz);
    if (off < 0 || size_t(off) + esz > buf.bytes || off % int64_t(esz) != 0)
      throw Error(fmt::format(
          "{}: out-of-bounds {} at {}: program ({}, {}, {}), element {} of the tile "
          "(index {}) {} element {} of argument '{}', which has {} elements of {}",
          launch_.kernelName, verb, locString(op->getLoc()), pid_[0], pid_[1], pid_[2], k,
          indexString(ptrs.shape, k), std::strcmp(verb, "store") == 0 ? "writes" : "reads",
          off / int64_t(esz), buf.name, count, dtype_name(buf.dtype)));
    if (buf.readonly && std::strcmp(verb, "load") != 0)
      throw Error(fmt::format("{}: {} at {}: program ({}, {}, {}) writes to argument '{}', "
                              "which was passed as a const (read-only) buffer",
                              launch_.kernelName, verb, locString(op->getLoc()), pid_[0],
                              pid_[1], pid_[2], buf.name));
    return buf.data + off;
  }

  /// make_tensor_descriptor checks TMA's rules; descriptor_load/store
  /// access the block at the offsets, skipping elements outside the tensor.
  void execDescriptorOp(Operation *op) {
    if (auto make = dyn_cast<tile::MakeTensorDescriptorOp>(op)) {
      const Tile &base = *get(make.getBase());
      Descriptor d{base.buf[0], base.i[0], {}, {}};
      for (Value v : make.getShape())
        d.shape.push_back(get(v)->i[0]);
      for (Value v : make.getStrides())
        d.strides.push_back(get(v)->i[0]);
      size_t esz = storageSize(make.getType().getBlockType().getElementType());
      const std::string &name = buffers_[size_t(d.buf)].name;
      // The buffer's own address counts too: a device copy of it would keep
      // its misalignment (a view into the middle of an array).
      uintptr_t address = reinterpret_cast<uintptr_t>(buffers_[size_t(d.buf)].data) + uintptr_t(d.offset);
      if (address % 16 != 0)
        error(op, fmt::format("tensor descriptor base must be 16-byte aligned, but it is at byte "
                              "{} of argument '{}', whose data starts at an address {} mod 16",
                              d.offset, name, reinterpret_cast<uintptr_t>(buffers_[size_t(d.buf)].data) % 16));
      for (size_t k = 0; k < d.shape.size(); ++k) {
        if (d.shape[k] < 1 || d.shape[k] > (int64_t(1) << 32))
          error(op, fmt::format("tensor descriptor extent {} is {}; extents are 1 to 2^32", k,
                                d.shape[k]));
        if (k + 1 < d.shape.size() &&
            (d.strides[k] < 1 || (d.strides[k] * int64_t(esz)) % 16 != 0 ||
             d.strides[k] * int64_t(esz) >= (int64_t(1) << 40)))
          error(op, fmt::format("tensor descriptor stride {} is {} elements ({} bytes); strides "
                                "must each be a positive multiple of 16 bytes below 2^40",
                                k, d.strides[k], d.strides[k] * int64_t(esz)));
      }
      descs_[make.getResult()] = std::move(d);
      return;
    }
    bool isLoad = isa<tile::DescriptorLoadOp>(op);
    const Descriptor &d = descs_.at(op->getOperand(0));
    const bool multicast = isLoad && cast<tile::DescriptorLoadOp>(op).getMulticast();
    auto type = cast<tile::TensorDescType>(op->getOperand(0).getType());
    RankedTensorType block = type.getBlockType();
    Type elem = block.getElementType();
    size_t rank = size_t(block.getRank()), esz = storageSize(elem);
    std::vector<int64_t> at;
    for (size_t k = 0; k < rank; ++k)
      at.push_back(get(op->getOperand(1 + k))->i[0]);
    // The block as a tile of pointers and the mask of elements inside the tensor.
    auto ptrs = makeTile(tile::PtrType::get(elem), {block.getShape().begin(), block.getShape().end()});
    std::vector<bool> inside(ptrs->size());
    std::vector<int64_t> idx(rank, 0);
    for (size_t k = 0; k < ptrs->size(); ++k) {
      int64_t off = d.offset;
      bool in = true;
      for (size_t dim = 0; dim < rank; ++dim) {
        int64_t c = at[dim] + idx[dim];
        in = in && c >= 0 && c < d.shape[dim];
        off += c * d.strides[dim] * int64_t(esz);
      }
      ptrs->buf[k] = d.buf;
      ptrs->i[k] = off;
      inside[k] = in;
      for (size_t dim = rank; dim-- > 0;) {
        if (++idx[dim] < block.getDimSize(int64_t(dim)))
          break;
        idx[dim] = 0;
      }
    }
    if (multicast)
      checkMulticast(op, d, at);
    if (isLoad) {
      auto t = makeTile(elem, ptrs->shape);
      for (size_t k = 0; k < t->size(); ++k) {
        bool isF = t->kind == Tile::Kind::Float;
        if (!inside[k]) {
          if (isF) t->f[k] = 0.0;
          else t->i[k] = 0;
          continue;
        }
        const char *p = address(op, *ptrs, k, elem, "load");
        if (isF) t->f[k] = readFloat(p, elem);
        else t->i[k] = readInt(p, elem);
      }
      env_[op->getResult(0)] = t;
      return;
    }
    const Tile &val = *get(op->getOperand(1 + rank));
    for (size_t k = 0; k < ptrs->size(); ++k) {
      if (!inside[k])
        continue;
      char *p = address(op, *ptrs, k, elem, "store");
      if (val.kind == Tile::Kind::Float) writeFloat(p, elem, val.f[k]);
      else writeInt(p, elem, val.i[k]);
    }
  }

  static bool enabled(const TileRef &mask, size_t k) { return !mask || mask->i[k] != 0; }

  TileRef load(tile::LoadOp l, ArrayRef<TileRef> in) {
    const Tile &ptrs = *in[0];
    TileRef mask = l.getMask() ? in[1] : nullptr;
    TileRef other = l.getOther() ? in[2] : nullptr;
    Type pointee = cast<tile::PtrType>(ptrs.elem).getPointeeType();
    auto t = makeTile(pointee, ptrs.shape);
    for (size_t k = 0; k < t->size(); ++k) {
      bool isF = t->kind == Tile::Kind::Float;
      if (!enabled(mask, k)) {
        if (isF) t->f[k] = other ? other->f[k] : 0.0;
        else t->i[k] = other ? other->i[k] : 0;
        continue;
      }
      const char *p = address(l, ptrs, k, pointee, "load");
      if (isF) t->f[k] = readFloat(p, pointee);
      else t->i[k] = readInt(p, pointee);
    }
    return t;
  }

  void store(tile::StoreOp s, ArrayRef<TileRef> in) {
    const Tile &ptrs = *in[0], &val = *in[1];
    TileRef mask = s.getMask() ? in[2] : nullptr;
    Type pointee = cast<tile::PtrType>(ptrs.elem).getPointeeType();
    for (size_t k = 0; k < ptrs.size(); ++k) {
      if (!enabled(mask, k))
        continue;
      char *p = address(s, ptrs, k, pointee, "store");
      if (val.kind == Tile::Kind::Float) writeFloat(p, pointee, val.f[k]);
      else writeInt(p, pointee, val.i[k]);
    }
  }

  TileRef atomicRMW(tile::AtomicRMWOp a, ArrayRef<TileRef> in) {
    const Tile &ptrs = *in[0], &val = *in[1];
    TileRef mask = a.getMask() ? in[2] : nullptr;
    Type pointee = cast<tile::PtrType>(ptrs.elem).getPointeeType();
    auto old = makeTile(pointee, ptrs.shape);
    bool isF = old->kind == Tile::Kind::Float;
    for (size_t k = 0; k < ptrs.size(); ++k) {
      if (!enabled(mask, k))
        continue;
      char *p = address(a, ptrs, k, pointee, "atomic");
      if (isF) {
        double o = readFloat(p, pointee), v = val.f[k], n = v;
        switch (a.getKind()) {
        case tile::AtomicRMWKind::Add: n = o + v; break;
        case tile::AtomicRMWKind::Max: n = fmaximum(o, v); break;
        case tile::AtomicRMWKind::Min: n = fminimum(o, v); break;
        case tile::AtomicRMWKind::Xchg: n = v; break;
        default: error(a, "bitwise atomics need integer elements");
        }
        old->f[k] = o;
        writeFloat(p, pointee, roundTo(pointee, n));
      } else {
        int64_t o = readInt(p, pointee), v = val.i[k], n = v;
        switch (a.getKind()) {
        case tile::AtomicRMWKind::Add: n = o + v; break;
        case tile::AtomicRMWKind::Max: n = std::max(o, v); break;
        case tile::AtomicRMWKind::Min: n = std::min(o, v); break;
        case tile::AtomicRMWKind::Xchg: n = v; break;
        case tile::AtomicRMWKind::And: n = o & v; break;
        case tile::AtomicRMWKind::Or: n = o | v; break;
        case tile::AtomicRMWKind::Xor: n = o ^ v; break;
        }
        old->i[k] = o;
        writeInt(p, pointee, wrapTo(pointee, n));
      }
    }
    return old;
  }

  TileRef atomicCAS(tile::AtomicCASOp a, ArrayRef<TileRef> in) {
    const Tile &ptrs = *in[0], &cmp = *in[1], &val = *in[2];
    Type pointee = cast<tile::PtrType>(ptrs.elem).getPointeeType();
    auto old = makeTile(pointee, ptrs.shape);
    size_t esz = storageSize(pointee);
    for (size_t k = 0; k < ptrs.size(); ++k) {
      char *p = address(a, ptrs, k, pointee, "atomic");
      // Compare bit patterns, as the hardware does.
      std::vector<char> want(esz), now(p, p + esz);
      if (old->kind == Tile::Kind::Float) {
        old->f[k] = readFloat(p, pointee);
        writeFloat(want.data(), pointee, cmp.f[k]);
        if (std::memcmp(want.data(), now.data(), esz) == 0)
          writeFloat(p, pointee, val.f[k]);
      } else {
        old->i[k] = readInt(p, pointee);
        writeInt(want.data(), pointee, cmp.i[k]);
        if (std::memcmp(want.data(), now.data(), esz) == 0)
          writeInt(p, pointee, val.i[k]);
      }
    }
    return old;
  }

  TileRef dot(tile::DotOp d, ArrayRef<TileRef> in) {
    const Tile &a = *in[0], &b = *in[1], &c = *in[2];
    int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
    auto r = std::make_shared<Tile>(c);
    if (r->kind == Tile::Kind::Int) {
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          int64_t acc = r->i[size_t(m * N + n)];
          for (int64_t k = 0; k < K; ++k)
            acc += a.i[size_t(m * K + k)] * b.i[size_t(k * N + n)];
          r->i[size_t(m * N + n)] = wrapTo(r->elem, acc);
        }
      return r;
    }
    bool tf32 = d.getPrecision() == tile::DotPrecision::TF32;
    auto operand = [&](const Tile &t, size_t k) { return tf32 ? toTF32(t.f[k]) : t.f[k]; };
    // Products are exact in double; the sum is rounded once per output, which
    // is at least as accurate as the hardware's fp32 accumulation.
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += operand(a, size_t(m * K + k)) * operand(b, size_t(k * N + n));
        size_t o = size_t(m * N + n);
        r->f[o] = roundTo(r->elem, r->f[o] + acc);
      }
    return r;
  }

  /// A reduce's or scan's operands, and the walk along its axis: `outer`
  /// runs of `len` elements, `inner` apart.
  struct AlongAxis {
    SmallVector<TileRef> srcs;
    int64_t axis = 0, outer = 1, len = 1, inner = 1;
  };
  template <class Op> AlongAxis alongAxis(Op op) {
    AlongAxis a;
    for (Value v : op.getSrcs())
      a.srcs.push_back(get(v));
    const std::vector<int64_t> &shape = a.srcs[0]->shape;
    a.axis = int32_t(op.getAxis());
    a.len = shape[size_t(a.axis)];
    for (int64_t d = 0; d < a.axis; ++d) a.outer *= shape[size_t(d)];
    for (size_t d = size_t(a.axis) + 1; d < shape.size(); ++d) a.inner *= shape[d];
    return a;
  }

  /// Simple combiners (one arith op on the two arguments) run natively;
  /// anything else interprets the region per step.
  void reduce(tile::ReduceOp r) {
    auto [srcs, axis, outer, len, inner] = alongAxis(r);
    const std::vector<int64_t> &shape = srcs[0]->shape;
    std::vector<int64_t> outShape(shape);
    outShape.erase(outShape.begin() + axis);
    size_t n = srcs.size();
    std::vector<std::shared_ptr<Tile>> outs;
    for (auto &s : srcs)
      outs.push_back(makeTile(s->elem, outShape));

    Block &body = r.getCombiner().front();
    Operation *single = &body.front();
    // One op on (acc, next) whose result is returned (tl::sum/max/min, a
    // user's `a * b`): evaluated directly, without the block's environment.
    bool fast = n == 1 && body.getOperations().size() == 2 && single->getNumOperands() == 2 &&
                single->getNumResults() == 1 && single->getOperand(0) == body.getArgument(0) &&
                single->getOperand(1) == body.getArgument(1) &&
                body.getTerminator()->getOperand(0) == single->getResult(0);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t j) { return size_t((o * len + j) * inner + i); };
        size_t dst = size_t(o * inner + i);
        // Pairwise, as a tree: neighbours combined (earlier, later) level
        // by level - the order a combiner may assume (associative), and a
        // float sum's error grows as log(len), not len (65536 f32 values
        // summed in order lost 3 digits; the GPU's tree, 1).
        std::vector<SmallVector<TileRef>> level;
        level.resize(static_cast<size_t>(len));
        for (int64_t j = 0; j < len; ++j)
          for (auto &s : srcs)
            level[size_t(j)].push_back(element(*s, at(j)));
        while (level.size() > 1) {
          std::vector<SmallVector<TileRef>> next;
          next.reserve((level.size() + 1) / 2);
          for (size_t j = 0; j + 1 < level.size(); j += 2) {
            if (fast) {
              TileRef pair[2] = {level[j][0], level[j + 1][0]};
              next.push_back({*evalElementwise(single, pair)});
              continue;
            }
            for (size_t k = 0; k < n; ++k) {
              env_[body.getArgument(unsigned(k))] = level[j][k];
              env_[body.getArgument(unsigned(n + k))] = level[j + 1][k];
            }
            next.push_back(execBlock(body));
          }
          if (level.size() % 2)
            next.push_back(std::move(level.back()));
          level = std::move(next);
        }
        for (size_t k = 0; k < n; ++k)
          setElement(*outs[k], dst, *level[0][k]);
      }
    for (size_t k = 0; k < n; ++k)
      env_[r.getResult(k)] = outs[k];
  }

  /// Inclusive scans along the axis, element by element in order (from the
  /// end with `reverse`): acc = combine(acc, next).
  void scan(tile::ScanOp r) {
    auto [srcs, axis, outer, len, inner] = alongAxis(r);
    const std::vector<int64_t> &shape = srcs[0]->shape;
    size_t n = srcs.size();
    std::vector<std::shared_ptr<Tile>> outs;
    for (auto &s : srcs)
      outs.push_back(makeTile(s->elem, shape));
    Block &body = r.getCombiner().front();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t j) { return size_t((o * len + (r.getReverse() ? len - 1 - j : j)) * inner + i); };
        SmallVector<TileRef> acc;
        for (auto &s : srcs)
          acc.push_back(element(*s, at(0)));
        for (size_t k = 0; k < n; ++k)
          setElement(*outs[k], at(0), *acc[k]);
        for (int64_t j = 1; j < len; ++j) {
          for (size_t k = 0; k < n; ++k) {
            env_[body.getArgument(unsigned(k))] = acc[k];
            env_[body.getArgument(unsigned(n + k))] = element(*srcs[k], at(j));
          }
          acc = execBlock(body);
          for (size_t k = 0; k < n; ++k)
            setElement(*outs[k], at(j), *acc[k]);
        }
      }
    for (size_t k = 0; k < n; ++k)
      env_[r.getResult(k)] = outs[k];
  }

  static TileRef element(const Tile &t, size_t k) {
    auto e = makeTile(t.elem, {});
    if (t.kind == Tile::Kind::Float) e->f[0] = t.f[k];
    else e->i[0] = t.i[k];
    if (t.kind == Tile::Kind::Ptr) e->buf[0] = t.buf[k];
    return e;
  }

  static void setElement(Tile &t, size_t k, const Tile &e) {
    if (t.kind == Tile::Kind::Float) t.f[k] = e.f[0];
    else t.i[k] = e.i[0];
    if (t.kind == Tile::Kind::Ptr) t.buf[k] = e.buf[0];
  }

  /// request_interrupt() (Ctrl-C in Python): stop between programs and
  /// loop iterations.
  void checkInterrupt() const {
    if (interrupt_requested())
      throw Interrupted(fmt::format("kernel '{}' interrupted in program ({}, {}, {})", launch_.kernelName, pid_[0],
                                    pid_[1], pid_[2]));
  }

  void forLoop(scf::ForOp f) {
    int64_t lo = get(f.getLowerBound())->i[0], hi = get(f.getUpperBound())->i[0],
            step = get(f.getStep())->i[0];
    if (step <= 0)
      error(f, fmt::format("tl::range step must be positive, got {}", step));
    SmallVector<TileRef> carried;
    for (Value v : f.getInitArgs())
      carried.push_back(get(v));
    Type ivType = f.getInductionVar().getType();
    // Compiled code steps an i32 counter in i32 (as Triton's does): one the
    // step carries past INT32_MAX would wrap and the loop go on, so the
    // compiled kernel traps before such a loop (guard-loop-counters). This
    // loop counts in 64 bits: it says why instead.
    // An i64 counter likewise at INT64_MAX (and here `iv += step` would
    // overflow): in 128 bits, where nothing does.
    const unsigned width = ivType.getIntOrFloatBitWidth();
    const __int128 max = width == 32 ? __int128(INT32_MAX) : __int128(INT64_MAX);
    // A descending tl::range counts up on its negated bounds (tile.descending):
    // say the user's.
    const int64_t sign = f->hasAttr("tile.descending") ? -1 : 1;
    if ((width == 32 || width == 64) && lo < hi &&
        __int128(lo) + (__int128(hi) - lo - 1) / step * step + step > max)
      error(f, fmt::format("this loop's i{} counter passes {} after its last iteration ({} to {} by {}): it would "
                           "wrap around and the loop go on (compiled, the kernel traps before the loop); {}",
                           width, sign * int64_t(max), sign * lo, sign * hi, sign * step,
                           width == 32 ? "give the loop i64 bounds (x.to(tl::i64))"
                                       : "its bounds and step come within a step of the i64 limit"));
    for (int64_t iv = lo; iv < hi; iv += step) {
      checkInterrupt();
      env_[f.getInductionVar()] = scalarInt(ivType, iv);
      for (auto [arg, val] : llvm::zip(f.getRegionIterArgs(), carried))
        env_[arg] = val;
      carried = execBlock(*f.getBody());
    }
    for (auto [res, val] : llvm::zip(f.getResults(), carried))
      env_[res] = val;
  }

  /// The condition's block, then (while it holds) the body's, each on the
  /// values the other passed on.
  void whileLoop(scf::WhileOp w) {
    SmallVector<TileRef> carried;
    for (Value v : w.getInits())
      carried.push_back(get(v));
    while (true) {
      checkInterrupt();
      for (auto [arg, val] : llvm::zip(w.getBeforeArguments(), carried))
        env_[arg] = val;
      SmallVector<TileRef> passed = execBlock(w.getBefore().front()); // condition, then its values
      const bool again = passed.front()->i[0] != 0;
      carried.assign(passed.begin() + 1, passed.end());
      if (!again)
        break;
      for (auto [arg, val] : llvm::zip(w.getAfterArguments(), carried))
        env_[arg] = val;
      carried = execBlock(w.getAfter().front());
    }
    for (auto [res, val] : llvm::zip(w.getResults(), carried))
      env_[res] = val;
  }

  void ifOp(scf::IfOp i) {
    bool cond = get(i.getCondition())->i[0] != 0;
    Region &region = cond ? i.getThenRegion() : i.getElseRegion();
    if (region.empty())
      return;
    SmallVector<TileRef> results = execBlock(region.front());
    for (auto [res, val] : llvm::zip(i.getResults(), results))
      env_[res] = val;
  }

  static std::string formatElement(const Tile &t, size_t k) {
    if (t.kind == Tile::Kind::Float) // as the GPU's and the simulator's %g: "28", "0.1", "1e-07"
      return fmt::format("{:g}", t.f[k]);
    if (t.kind == Tile::Kind::Ptr)
      return fmt::format("arg{}+{}", t.buf[k], t.i[k]);
    return fmt::format("{}", t.i[k]);
  }

  void print(tile::PrintOp p, ArrayRef<TileRef> in) {
    std::string line = fmt::format("[{}] pid ({}, {}, {}) {}", launch_.kernelName, pid_[0],
                                   pid_[1], pid_[2], p.getPrefix().str());
    for (const TileRef &t : in) {
      if (t->shape.empty()) {
        line += " " + formatElement(*t, 0);
        continue;
      }
      line += " [";
      for (size_t k = 0; k < t->size(); ++k)
        line += (k ? ", " : "") + formatElement(*t, k);
      line += "]";
    }
    line += '\n';
    detail::emit_print(line); // stdout, or Python's sys.stdout (tegula/print.h)
  }

  /// Said as the GPU's error report says it (runtime/DeviceErrorReport.h),
  /// for the first failing element.
  void assertOp(tile::AssertOp a, const Tile &cond) {
    for (size_t k = 0; k < cond.size(); ++k) {
      if (cond.i[k] != 0)
        continue;
      runtime::DeviceErrorRecord record;
      record.site = 1;
      for (int d = 0; d < 3; ++d)
        record.program[d] = uint32_t(pid_[d]);
      record.rank = uint32_t(std::min<size_t>(cond.shape.size(), runtime::kErrorReportMaxRank));
      const std::vector<int64_t> index = unflatten(cond.shape, k);
      for (uint32_t d = 0; d < record.rank; ++d)
        record.index[d] = int32_t(index[d]);
      // The DSL's own checks (interpreter_only) say their rule, not an assertion.
      const std::string message = a.getInterpreterOnly() ? a.getMessage().str()
                                                         : runtime::deviceAssertionMessage(a.getMessage().str());
      const std::string site = siteText(a.getLoc(), message);
      throw Error(fmt::format("kernel '{}' stopped: {}", launch_.kernelName, runtime::describeDeviceError(record, {site})));
    }
  }
};

} // namespace

void run(func::FuncOp kernel, const Launch &launch) {
  Interpreter(launch).run(kernel);
}

} // namespace tegula::interp
