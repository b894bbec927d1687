//===- Elementwise.cpp - interpreting arith and math ops on tiles ---------===//
#include "compiler/interp/Elementwise.h"

#include "dialects/tile/TileDialect.h"
#include "tegula/dtype.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

#include "llvm/ADT/APFloat.h"

using namespace mlir;

namespace tegula::interp {

std::shared_ptr<Tile> makeTile(Type elem, std::vector<int64_t> shape) {
  auto t = std::make_shared<Tile>();
  t->elem = elem;
  t->shape = std::move(shape);
  size_t n = t->size();
  if (isa<FloatType>(elem)) {
    t->kind = Tile::Kind::Float;
    t->f.resize(n);
  } else if (isa<tile::PtrType>(elem)) {
    t->kind = Tile::Kind::Ptr;
    t->i.resize(n);
    t->buf.resize(n);
  } else {
    t->kind = Tile::Kind::Int;
    t->i.resize(n);
  }
  return t;
}

double roundTo(Type t, double v) {
  if (t.isF64())
    return v;
  if (t.isF32())
    return double(float(v));
  if (t.isBF16())
    return double(float(bfloat16(float(v))));
  if (t.isF16())
    return double(float(float16(float(v))));
  if (isa<Float8E4M3FNType>(t))
    return fp8_e4m3_format::decode(fp8_e4m3_format::encode(v));
  if (isa<Float8E5M2Type>(t))
    return fp8_e5m2_format::decode(fp8_e5m2_format::encode(v));
  return v;
}

int64_t wrapTo(Type t, int64_t v) {
  switch (t.getIntOrFloatBitWidth()) {
  case 1: return v & 1;
  case 8: return int8_t(v);
  case 16: return int16_t(v);
  case 32: return int32_t(v);
  default: return v;
  }
}

namespace {

template <typename F>
TileRef mapFloat(const Tile &a, Type resElem, F f) {
  auto r = makeTile(resElem, a.shape);
  for (size_t k = 0; k < a.f.size(); ++k)
    r->f[k] = roundTo(resElem, f(a.f[k]));
  return r;
}

template <typename F>
TileRef zipFloat(const Tile &a, const Tile &b, F f) {
  auto r = makeTile(a.elem, a.shape);
  for (size_t k = 0; k < a.f.size(); ++k)
    r->f[k] = roundTo(a.elem, f(a.f[k], b.f[k]));
  return r;
}

template <typename F>
TileRef zipInt(const Tile &a, const Tile &b, F f) {
  auto r = makeTile(a.elem, a.shape);
  for (size_t k = 0; k < a.i.size(); ++k)
    r->i[k] = wrapTo(a.elem, f(a.i[k], b.i[k]));
  return r;
}

uint64_t unsignedOf(Type t, int64_t v) {
  unsigned w = t.getIntOrFloatBitWidth();
  return w >= 64 ? uint64_t(v) : uint64_t(v) & ((uint64_t(1) << w) - 1);
}

bool cmpF(arith::CmpFPredicate p, double x, double y) {
  bool uno = std::isnan(x) || std::isnan(y);
  using P = arith::CmpFPredicate;
  switch (p) {
  case P::AlwaysFalse: return false;
  case P::OEQ: return !uno && x == y;
  case P::OGT: return !uno && x > y;
  case P::OGE: return !uno && x >= y;
  case P::OLT: return !uno && x < y;
  case P::OLE: return !uno && x <= y;
  case P::ONE: return !uno && x != y;
  case P::ORD: return !uno;
  case P::UEQ: return uno || x == y;
  case P::UGT: return uno || x > y;
  case P::UGE: return uno || x >= y;
  case P::ULT: return uno || x < y;
  case P::ULE: return uno || x <= y;
  case P::UNE: return uno || x != y;
  case P::UNO: return uno;
  case P::AlwaysTrue: return true;
  }
  return false;
}

bool cmpI(arith::CmpIPredicate p, Type t, int64_t x, int64_t y) {
  using P = arith::CmpIPredicate;
  uint64_t ux = unsignedOf(t, x), uy = unsignedOf(t, y);
  switch (p) {
  case P::eq: return x == y;
  case P::ne: return x != y;
  case P::slt: return x < y;
  case P::sle: return x <= y;
  case P::sgt: return x > y;
  case P::sge: return x >= y;
  case P::ult: return ux < uy;
  case P::ule: return ux <= uy;
  case P::ugt: return ux > uy;
  case P::uge: return ux >= uy;
  }
  return false;
}

} // namespace

double fmaximum(double x, double y) {
  if (std::isnan(x) || std::isnan(y))
    return NAN;
  if (x == y) // +0 beats -0
    return std::signbit(x) ? y : x;
  return x > y ? x : y;
}

double fminimum(double x, double y) {
  if (std::isnan(x) || std::isnan(y))
    return NAN;
  if (x == y) // -0 beats +0
    return std::signbit(x) ? x : y;
  return x < y ? x : y;
}

double intToFloat(int64_t v, bool isUnsigned, Type t) {
  // One correct rounding straight to the target type (no double detour).
  llvm::APFloat f(isa<FloatType>(t) ? cast<FloatType>(t).getFloatSemantics()
                                    : llvm::APFloat::IEEEdouble());
  f.convertFromAPInt(llvm::APInt(64, uint64_t(v), !isUnsigned), !isUnsigned,
                     llvm::APFloat::rmNearestTiesToEven);
  bool lost;
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return f.convertToDouble();
}

float rcpApproxFtz(float x) {
  const auto flush = [](float v) { return std::fabs(v) < std::numeric_limits<float>::min() ? std::copysign(0.0f, v) : v; };
  return flush(1.0f / flush(x));
}

std::optional<TileRef> evalElementwise(Operation *op, llvm::ArrayRef<TileRef> in) {
  Type resElem = op->getNumResults() ? tile::getElementTypeOrSelf(op->getResult(0).getType())
                                     : Type();
  auto a = [&]() -> const Tile & { return *in[0]; };
  auto b = [&]() -> const Tile & { return *in[1]; };
  // A zero divisor gives what the GPU's div/rem give: all ones, and x.
  auto checkedDiv = [&](bool isRem) {
    return zipInt(a(), b(), [&](int64_t x, int64_t y) -> int64_t {
      if (y == 0)
        return isRem ? x : -1;
      if (y == -1) // avoid INT_MIN / -1 overflow; wrapTo handles the width
        return isRem ? 0 : int64_t(0 - uint64_t(x));
      return isRem ? x % y : x / y;
    });
  };
  using R = std::optional<TileRef>;
  return llvm::TypeSwitch<Operation *, R>(op)
      // Float arithmetic.
      .Case([&](arith::AddFOp) { return zipFloat(a(), b(), std::plus<>()); })
      .Case([&](arith::SubFOp) { return zipFloat(a(), b(), std::minus<>()); })
      .Case([&](arith::MulFOp) { return zipFloat(a(), b(), std::multiplies<>()); })
      .Case([&](arith::DivFOp d) {
        // tl::rcp (afn + arcp, f32): a times the GPU's rcp.approx.ftz of b,
        // computed exactly - subnormal inputs and results flushed to zero.
        if (resElem.isF32() && bitEnumContainsAll(d.getFastmath(), arith::FastMathFlags::afn | arith::FastMathFlags::arcp))
          return zipFloat(a(), b(), [](double x, double y) { return x * double(rcpApproxFtz(float(y))); });
        return zipFloat(a(), b(), std::divides<>());
      })
      .Case([&](arith::RemFOp) { return zipFloat(a(), b(), [](double x, double y) { return std::fmod(x, y); }); })
      .Case([&](arith::MaximumFOp) { return zipFloat(a(), b(), fmaximum); })
      .Case([&](arith::MinimumFOp) { return zipFloat(a(), b(), fminimum); })
      .Case([&](arith::MaxNumFOp) { return zipFloat(a(), b(), [](double x, double y) { return std::fmax(x, y); }); })
      .Case([&](arith::MinNumFOp) { return zipFloat(a(), b(), [](double x, double y) { return std::fmin(x, y); }); })
      .Case([&](arith::NegFOp) { return mapFloat(a(), resElem, std::negate<>()); })
      // Integer arithmetic.
      .Case([&](arith::AddIOp) { return zipInt(a(), b(), std::plus<>()); })
      .Case([&](arith::SubIOp) { return zipInt(a(), b(), std::minus<>()); })
      .Case([&](arith::MulIOp) { return zipInt(a(), b(), [](int64_t x, int64_t y) { return int64_t(uint64_t(x) * uint64_t(y)); }); })
      .Case([&](arith::DivSIOp) { return checkedDiv(false); })
      .Case([&](arith::RemSIOp) { return checkedDiv(true); })
      .Case([&](arith::DivUIOp) {
        Type t = a().elem;
        return zipInt(a(), b(), [&](int64_t x, int64_t y) {
          return y == 0 ? int64_t(-1) : int64_t(unsignedOf(t, x) / unsignedOf(t, y));
        });
      })
      .Case([&](arith::RemUIOp) {
        Type t = a().elem;
        return zipInt(a(), b(), [&](int64_t x, int64_t y) {
          return y == 0 ? x : int64_t(unsignedOf(t, x) % unsignedOf(t, y));
        });
      })
      .Case([&](arith::AndIOp) { return zipInt(a(), b(), std::bit_and<>()); })
      .Case([&](arith::OrIOp) { return zipInt(a(), b(), std::bit_or<>()); })
      .Case([&](arith::XOrIOp) { return zipInt(a(), b(), std::bit_xor<>()); })
      .Case([&](arith::MaxSIOp) { return zipInt(a(), b(), [](int64_t x, int64_t y) { return std::max(x, y); }); })
      .Case([&](arith::MinSIOp) { return zipInt(a(), b(), [](int64_t x, int64_t y) { return std::min(x, y); }); })
      .Case([&](arith::MaxUIOp) {
        Type t = a().elem;
        return zipInt(a(), b(), [t](int64_t x, int64_t y) { return unsignedOf(t, x) >= unsignedOf(t, y) ? x : y; });
      })
      .Case([&](arith::MinUIOp) {
        Type t = a().elem;
        return zipInt(a(), b(), [t](int64_t x, int64_t y) { return unsignedOf(t, x) <= unsignedOf(t, y) ? x : y; });
      })
      .Case([&](arith::ShLIOp) {
        unsigned w = a().elem.getIntOrFloatBitWidth();
        return zipInt(a(), b(), [w](int64_t x, int64_t y) {
          return uint64_t(y) >= w ? int64_t(0) : int64_t(uint64_t(x) << y);
        });
      })
      .Case([&](arith::ShRSIOp) {
        unsigned w = a().elem.getIntOrFloatBitWidth();
        return zipInt(a(), b(), [w](int64_t x, int64_t y) {
          return uint64_t(y) >= w ? (x < 0 ? -1 : 0) : x >> y;
        });
      })
      .Case([&](arith::ShRUIOp) {
        Type t = a().elem;
        unsigned w = t.getIntOrFloatBitWidth();
        return zipInt(a(), b(), [&, w](int64_t x, int64_t y) {
          return uint64_t(y) >= w ? int64_t(0) : int64_t(unsignedOf(t, x) >> y);
        });
      })
      // Comparisons and select.
      .Case([&](arith::CmpFOp c) {
        auto r = makeTile(resElem, a().shape);
        for (size_t k = 0; k < r->i.size(); ++k)
          r->i[k] = cmpF(c.getPredicate(), a().f[k], b().f[k]);
        return TileRef(r);
      })
      .Case([&](arith::CmpIOp c) {
        auto r = makeTile(resElem, a().shape);
        Type t = a().elem;
        for (size_t k = 0; k < r->i.size(); ++k)
          r->i[k] = cmpI(c.getPredicate(), t, a().i[k], b().i[k]);
        return TileRef(r);
      })
      .Case([&](arith::SelectOp) {
        const Tile &c = *in[0], &x = *in[1], &y = *in[2];
        auto r = makeTile(x.elem, x.shape);
        bool scalarCond = c.shape.empty() && !x.shape.empty();
        for (size_t k = 0; k < r->size(); ++k) {
          bool take = c.i[scalarCond ? 0 : k] != 0;
          const Tile &s = take ? x : y;
          if (r->kind == Tile::Kind::Float) r->f[k] = s.f[k];
          else r->i[k] = s.i[k];
          if (r->kind == Tile::Kind::Ptr) r->buf[k] = s.buf[k];
        }
        return TileRef(r);
      })
      // Conversions.
      .Case<arith::ExtFOp, arith::TruncFOp>([&](auto) {
        return mapFloat(a(), resElem, [](double x) { return x; });
      })
      .Case([&](arith::BitcastOp) { // the same bytes read as the other type
        const Tile &src = a();
        auto r = makeTile(resElem, src.shape);
        char bytes[8] = {};
        for (size_t k = 0; k < src.size(); ++k) {
          if (src.kind == Tile::Kind::Float)
            writeFloat(bytes, src.elem, src.f[k]);
          else
            writeInt(bytes, src.elem, src.i[k]);
          if (r->kind == Tile::Kind::Float)
            r->f[k] = readFloat(bytes, resElem);
          else
            r->i[k] = readInt(bytes, resElem);
        }
        return TileRef(r);
      })
      .Case<arith::ExtSIOp, arith::TruncIOp>([&](auto) {
        auto r = makeTile(resElem, a().shape);
        for (size_t k = 0; k < r->i.size(); ++k)
          r->i[k] = wrapTo(resElem, a().i[k]);
        return TileRef(r);
      })
      .Case([&](arith::ExtUIOp) {
        auto r = makeTile(resElem, a().shape);
        for (size_t k = 0; k < r->i.size(); ++k)
          r->i[k] = wrapTo(resElem, int64_t(unsignedOf(a().elem, a().i[k])));
        return TileRef(r);
      })
      .Case<arith::SIToFPOp, arith::UIToFPOp>([&](auto cvt) {
        bool isUnsigned = isa<arith::UIToFPOp>(cvt.getOperation());
        auto r = makeTile(resElem, a().shape);
        for (size_t k = 0; k < r->f.size(); ++k)
          r->f[k] = intToFloat(isUnsigned ? int64_t(unsignedOf(a().elem, a().i[k])) : a().i[k],
                               isUnsigned, resElem);
        return TileRef(r);
      })
      .Case<arith::FPToSIOp, arith::FPToUIOp>([&](auto) {
        // Out-of-range and NaN inputs saturate (PTX cvt.rzi semantics).
        auto r = makeTile(resElem, a().shape);
        unsigned w = resElem.getIntOrFloatBitWidth();
        if (w == 1) { // fptosi to i1: only 0 and -1 (true) are representable
          for (size_t k = 0; k < r->i.size(); ++k)
            r->i[k] = std::trunc(a().f[k]) != 0 && !std::isnan(a().f[k]);
          return TileRef(r);
        }
        double limit = std::ldexp(1.0, int(w) - 1); // 2^(w-1), exact in double
        int64_t maxV = w >= 64 ? INT64_MAX : (int64_t(1) << (w - 1)) - 1;
        int64_t minV = w >= 64 ? INT64_MIN : -(int64_t(1) << (w - 1));
        for (size_t k = 0; k < r->i.size(); ++k) {
          double x = std::trunc(a().f[k]);
          r->i[k] = std::isnan(x) ? 0 : x >= limit ? maxV : x < -limit ? minV : int64_t(x);
        }
        return TileRef(r);
      })
      // Math.
      .Case([&](math::ExpOp) { return mapFloat(a(), resElem, [](double x) { return std::exp(x); }); })
      .Case([&](math::Exp2Op) {
        // f32: the GPU's ex2.approx.ftz - subnormal results flush to +0.
        const bool f32 = resElem.isF32();
        return mapFloat(a(), resElem, [f32](double x) {
          if (!f32)
            return std::exp2(x);
          const float r = float(std::exp2(x));
          return r < std::numeric_limits<float>::min() ? 0.0 : double(r);
        });
      })
      .Case([&](math::LogOp) { return mapFloat(a(), resElem, [](double x) { return std::log(x); }); })
      .Case([&](math::Log2Op) { return mapFloat(a(), resElem, [](double x) { return std::log2(x); }); })
      .Case([&](math::SqrtOp) { return mapFloat(a(), resElem, [](double x) { return std::sqrt(x); }); })
      .Case([&](math::RsqrtOp) { return mapFloat(a(), resElem, [](double x) { return 1.0 / std::sqrt(x); }); })
      .Case([&](math::TanhOp) { return mapFloat(a(), resElem, [](double x) { return std::tanh(x); }); })
      .Case([&](math::ErfOp) { return mapFloat(a(), resElem, [](double x) { return std::erf(x); }); })
      .Case([&](math::SinOp) { return mapFloat(a(), resElem, [](double x) { return std::sin(x); }); })
      .Case([&](math::CosOp) { return mapFloat(a(), resElem, [](double x) { return std::cos(x); }); })
      .Case([&](math::AbsFOp) { return mapFloat(a(), resElem, [](double x) { return std::fabs(x); }); })
      .Case([&](math::FloorOp) { return mapFloat(a(), resElem, [](double x) { return std::floor(x); }); })
      .Case([&](math::CeilOp) { return mapFloat(a(), resElem, [](double x) { return std::ceil(x); }); })
      .Case([&](math::TanOp) { return mapFloat(a(), resElem, [](double x) { return std::tan(x); }); })
      .Case([&](math::AsinOp) { return mapFloat(a(), resElem, [](double x) { return std::asin(x); }); })
      .Case([&](math::AcosOp) { return mapFloat(a(), resElem, [](double x) { return std::acos(x); }); })
      .Case([&](math::AtanOp) { return mapFloat(a(), resElem, [](double x) { return std::atan(x); }); })
      .Case([&](math::SinhOp) { return mapFloat(a(), resElem, [](double x) { return std::sinh(x); }); })
      .Case([&](math::CoshOp) { return mapFloat(a(), resElem, [](double x) { return std::cosh(x); }); })
      .Case([&](math::AsinhOp) { return mapFloat(a(), resElem, [](double x) { return std::asinh(x); }); })
      .Case([&](math::AcoshOp) { return mapFloat(a(), resElem, [](double x) { return std::acosh(x); }); })
      .Case([&](math::AtanhOp) { return mapFloat(a(), resElem, [](double x) { return std::atanh(x); }); })
      .Case([&](math::ExpM1Op) { return mapFloat(a(), resElem, [](double x) { return std::expm1(x); }); })
      .Case([&](math::Log1pOp) { return mapFloat(a(), resElem, [](double x) { return std::log1p(x); }); })
      .Case([&](math::Log10Op) { return mapFloat(a(), resElem, [](double x) { return std::log10(x); }); })
      .Case([&](math::ErfcOp) { return mapFloat(a(), resElem, [](double x) { return std::erfc(x); }); })
      .Case([&](math::CbrtOp) { return mapFloat(a(), resElem, [](double x) { return std::cbrt(x); }); })
      .Case([&](math::TruncOp) { return mapFloat(a(), resElem, [](double x) { return std::trunc(x); }); })
      .Case([&](math::RoundOp) { return mapFloat(a(), resElem, [](double x) { return std::round(x); }); })
      .Case([&](math::RoundEvenOp) { return mapFloat(a(), resElem, [](double x) { return std::nearbyint(x); }); })
      .Case([&](math::PowFOp) { return zipFloat(a(), b(), [](double x, double y) { return std::pow(x, y); }); })
      .Case([&](math::Atan2Op) { return zipFloat(a(), b(), [](double y, double x) { return std::atan2(y, x); }); })
      .Case([&](math::CopySignOp) { return zipFloat(a(), b(), [](double x, double y) { return std::copysign(x, y); }); })
      .Case([&](math::AbsIOp) {
        auto r = makeTile(resElem, a().shape);
        for (size_t k = 0; k < r->i.size(); ++k)
          r->i[k] = wrapTo(resElem, a().i[k] < 0 ? -a().i[k] : a().i[k]);
        return TileRef(r);
      })
      .Case([&](math::FmaOp) {
        const Tile &x = *in[0], &y = *in[1], &z = *in[2];
        auto r = makeTile(resElem, x.shape);
        // f32 rounded once, as fma.rn.f32 does (in double, then to f32, would
        // round twice).
        const bool f32 = resElem.isF32();
        for (size_t k = 0; k < r->f.size(); ++k)
          r->f[k] = f32 ? double(std::fmaf(float(x.f[k]), float(y.f[k]), float(z.f[k])))
                        : roundTo(resElem, std::fma(x.f[k], y.f[k], z.f[k]));
        return TileRef(r);
      })
      .Default([](Operation *) { return R(); });
}

} // namespace tegula::interp
