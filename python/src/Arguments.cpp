//===- Arguments.cpp - Python objects as kernel launch arguments ----------===//
#include "Arguments.h"

#include "DLPack.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <cstring>

namespace py = pybind11;

namespace tegula::python {
namespace {

/// Tegula's element type for an array library's dtype name (numpy, and
/// ml_dtypes' bfloat16, float8_e4m3fn and float8_e5m2).
std::optional<DType> dtypeNamed(const std::string &name) {
  static const std::pair<const char *, DType> names[] = {
      {"float16", DType::f16}, {"bfloat16", DType::bf16}, {"float32", DType::f32},
      {"float64", DType::f64}, {"int8", DType::i8},       {"int16", DType::i16},
      {"int32", DType::i32},   {"int64", DType::i64},     {"bool", DType::i1},
      {"float8_e4m3fn", DType::f8e4m3}, {"float8_e5m2", DType::f8e5m2}};
  for (auto &[n, t] : names)
    if (name == n)
      return t;
  return std::nullopt;
}

std::optional<DType> dtypeOf(const dlpack::DataType &t) {
  if (t.lanes != 1)
    return std::nullopt;
  switch (t.code) {
  case dlpack::kFloat:
    return t.bits == 16 ? std::optional(DType::f16)
           : t.bits == 32 ? std::optional(DType::f32)
           : t.bits == 64 ? std::optional(DType::f64)
                          : std::nullopt;
  case dlpack::kBfloat: return t.bits == 16 ? std::optional(DType::bf16) : std::nullopt;
  case dlpack::kInt:
    return t.bits == 8 ? std::optional(DType::i8)
           : t.bits == 16 ? std::optional(DType::i16)
           : t.bits == 32 ? std::optional(DType::i32)
           : t.bits == 64 ? std::optional(DType::i64)
                          : std::nullopt;
  case dlpack::kBool: return t.bits == 8 ? std::optional(DType::i1) : std::nullopt;
  default: return std::nullopt;
  }
}

std::string dlpackTypeName(const dlpack::DataType &t) {
  const char *codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  return fmt::format("{}{}{}", t.code < 7 ? codes[t.code] : "code?", int(t.bits),
                     t.lanes != 1 ? fmt::format("x{}", t.lanes) : "");
}

/// The __cuda_array_interface__ / __array_interface__ typestr, e.g. "<f4".
std::optional<DType> dtypeOfTypestr(const std::string &typestr) {
  if (typestr.size() < 3)
    return std::nullopt;
  const char kind = typestr[1];
  const int bytes = std::atoi(typestr.c_str() + 2);
  if (kind == 'f')
    return bytes == 2 ? std::optional(DType::f16)
           : bytes == 4 ? std::optional(DType::f32)
           : bytes == 8 ? std::optional(DType::f64)
                        : std::nullopt;
  if (kind == 'i')
    return bytes == 1 ? std::optional(DType::i8)
           : bytes == 2 ? std::optional(DType::i16)
           : bytes == 4 ? std::optional(DType::i32)
           : bytes == 8 ? std::optional(DType::i64)
                        : std::nullopt;
  if (kind == 'b' && bytes == 1)
    return DType::i1;
  return std::nullopt;
}

/// Whether `strides` (in elements, or bytes when `itemBytes` > 0) describe a
/// compact row-major array of `shape`.
bool rowMajor(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides,
              int64_t unit) {
  int64_t expected = unit;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && strides[d] != expected)
      return false;
    expected *= shape[d];
  }
  return true;
}

/// Tegula reads elements in the machine's byte order (little-endian on every
/// GPU host); a byte-swapped array would be read as other numbers.
[[noreturn]] void notNativeByteOrder(const ArgName &what, const std::string &dtype) {
  throw py::type_error(fmt::format("{}: the array's elements are in the other byte order ({}); Tegula reads them "
                                   "in the machine's - pass a converted copy (array.astype(array.dtype.newbyteorder"
                                   "('=')))",
                                   what.text(), dtype));
}

[[noreturn]] void notContiguous(const ArgName &what) {
  throw py::value_error(fmt::format("{}: the array is not contiguous (a strided view); Tegula "
                                    "kernels take row-major contiguous arrays - pass a copy "
                                    "(numpy.ascontiguousarray, tensor.contiguous())",
                                    what.text()));
}

/// `dict[key]` for an interned key; KeyError naming the interface when absent.
py::handle item(py::handle dict, PyObject *key, const ArgName &what) {
  PyObject *v = PyDict_GetItemWithError(dict.ptr(), key);
  if (!v && !PyErr_Occurred())
    throw py::key_error(fmt::format("{}: __cuda_array_interface__ has no '{}'", what.text(),
                                    PyUnicode_AsUTF8(key)));
  if (!v)
    throw py::error_already_set();
  return v;
}

std::vector<int64_t> int64s(py::handle sequence) {
  std::vector<int64_t> out;
  for (py::handle d : sequence)
    out.push_back(py::cast<int64_t>(d));
  return out;
}

ArrayView fromCudaArrayInterface(py::handle obj, const ArgName &what) {
  static PyObject *const interface = interned("__cuda_array_interface__"),
                         *const dataKey = interned("data"), *const shapeKey = interned("shape"),
                         *const typeKey = interned("typestr"), *const stridesKey = interned("strides");
  py::object cai = py::reinterpret_steal<py::object>(PyObject_GetAttr(obj.ptr(), interface));
  if (!cai)
    throw py::error_already_set();
  if (!PyDict_Check(cai.ptr()))
    throw py::type_error(fmt::format("{}: __cuda_array_interface__ is not a dict", what.text()));
  ArrayView v;
  v.on_device = true;
  py::handle rawData = item(cai, dataKey, what);
  py::tuple data = PyTuple_Check(rawData.ptr()) ? py::reinterpret_borrow<py::tuple>(rawData)
                                                : py::tuple(py::reinterpret_borrow<py::object>(rawData));
  v.address = py::cast<uint64_t>(data[0]);
  v.readonly = py::cast<bool>(data[1]);
  const std::vector<int64_t> shape = int64s(item(cai, shapeKey, what));
  v.dtype_name = py::cast<std::string>(item(cai, typeKey, what));
  v.dtype = dtypeOfTypestr(v.dtype_name);
  if (v.dtype_name.starts_with(">"))
    notNativeByteOrder(what, v.dtype_name);
  v.count = 1;
  for (int64_t d : shape)
    v.count *= size_t(d);
  PyObject *strides = PyDict_GetItemWithError(cai.ptr(), stridesKey);
  if (strides && strides != Py_None && v.dtype &&
      !rowMajor(shape, int64s(strides), int64_t(dtype_size(*v.dtype))))
    notContiguous(what);
  return v;
}

ArrayView fromDLPack(py::handle obj, const ArgName &what, ArgumentLifetimes &keep) {
  py::object capsule = obj.attr("__dlpack__")();
  PyObject *raw = capsule.ptr();
  if (!PyCapsule_IsValid(raw, "dltensor"))
    throw py::type_error(fmt::format("{}: __dlpack__() did not return an unused 'dltensor' capsule",
                                     what.text()));
  auto *managed = static_cast<dlpack::ManagedTensor *>(PyCapsule_GetPointer(raw, "dltensor"));
  // Consumed: the capsule must not free it; we call the deleter after the launch.
  PyCapsule_SetName(raw, "used_dltensor");
  keep.consumed(managed);
  const dlpack::Tensor &t = managed->dl_tensor;
  ArrayView v;
  v.dtype = dtypeOf(t.dtype);
  v.dtype_name = dlpackTypeName(t.dtype);
  if (t.device.device_type == dlpack::kCUDA || t.device.device_type == dlpack::kCUDAManaged)
    v.on_device = true;
  else if (t.device.device_type != dlpack::kCPU && t.device.device_type != dlpack::kCUDAHost)
    throw py::value_error(fmt::format("{}: the array lives on DLPack device type {}, which Tegula "
                                      "cannot use (CPU or CUDA only)",
                                      what.text(), t.device.device_type));
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  v.count = 1;
  for (int64_t d : shape)
    v.count *= size_t(d);
  if (t.strides && !rowMajor(shape, std::vector<int64_t>(t.strides, t.strides + t.ndim), 1))
    notContiguous(what);
  v.address = reinterpret_cast<uint64_t>(t.data) + t.byte_offset;
  return v;
}

/// torch's element types (singleton torch.dtype objects), compared by
/// identity: reading `tensor.dtype` is a C attribute, where torch's
/// __cuda_array_interface__ and __dlpack__ are Python code (tens of
/// microseconds a launch for three tensors, measured on an H100).
struct TorchDtype {
  PyObject *dtype; // kept for the process, like torch's own
  DType tegula;
  const char *name;
};
const std::vector<TorchDtype> &torchDtypes(py::handle torch) {
  static const std::vector<TorchDtype> table = [&] {
    std::vector<TorchDtype> out;
    for (auto [name, dtype] : std::initializer_list<std::pair<const char *, DType>>{
             {"float32", DType::f32}, {"bfloat16", DType::bf16}, {"float16", DType::f16},
             {"float64", DType::f64}, {"int32", DType::i32}, {"int64", DType::i64},
             {"int8", DType::i8}, {"int16", DType::i16}, {"bool", DType::i1},
             {"float8_e4m3fn", DType::f8e4m3}, {"float8_e5m2", DType::f8e5m2}}) {
      if (PyObject *d = PyObject_GetAttrString(torch.ptr(), name))
        out.push_back({d, dtype, name});
      else
        PyErr_Clear(); // an older torch without fp8
    }
    return out;
  }();
  return table;
}

/// A torch.Tensor read through its C accessors (data_ptr, dtype, is_cuda,
/// is_contiguous, numel) - the same facts as its DLPack or
/// __cuda_array_interface__ view, without building either.
ArrayView fromTorch(py::handle obj, py::handle torch, const ArgName &what) {
  static PyObject *const dtypeName = interned("dtype"), *const isCuda = interned("is_cuda"),
                         *const isCpu = interned("is_cpu"), *const isContiguous = interned("is_contiguous"),
                         *const numel = interned("numel"), *const dataPtr = interned("data_ptr");
  auto call = [&](PyObject *method) {
    py::object r = py::reinterpret_steal<py::object>(PyObject_CallMethodNoArgs(obj.ptr(), method));
    if (!r)
      throw py::error_already_set();
    return r;
  };
  auto attr = [&](PyObject *name) {
    py::object r = py::reinterpret_steal<py::object>(PyObject_GetAttr(obj.ptr(), name));
    if (!r)
      throw py::error_already_set();
    return r;
  };
  auto truth = [](const py::object &o) {
    const int b = PyObject_IsTrue(o.ptr());
    if (b < 0)
      throw py::error_already_set();
    return b == 1;
  };
  ArrayView v;
  py::object dtype = attr(dtypeName);
  for (const TorchDtype &d : torchDtypes(torch))
    if (d.dtype == dtype.ptr()) {
      v.dtype = d.tegula;
      v.dtype_name = d.name;
    }
  if (!v.dtype) { // named in the error
    v.dtype_name = py::str(dtype).cast<std::string>();
    if (v.dtype_name.starts_with("torch."))
      v.dtype_name.erase(0, 6);
  }
  v.on_device = truth(attr(isCuda));
  if (!v.on_device && !truth(attr(isCpu)))
    throw py::value_error(fmt::format("{}: the tensor is on {}, which Tegula cannot use (CPU or CUDA only)",
                                      what.text(), py::str(obj.attr("device")).cast<std::string>()));
  if (!truth(call(isContiguous)))
    notContiguous(what);
  v.count = call(numel).cast<size_t>();
  v.address = call(dataPtr).cast<uint64_t>();
  return v;
}

ArrayView fromNumpy(py::handle obj, const ArgName &what) {
  ArrayView v;
  py::object dtype = obj.attr("dtype");
  v.dtype_name = dtype.attr("name").cast<std::string>();
  v.dtype = dtypeNamed(v.dtype_name);
  if (!dtype.attr("isnative").cast<bool>())
    notNativeByteOrder(what, py::str(dtype.attr("str")).cast<std::string>());
  py::object flags = obj.attr("flags");
  if (!flags.attr("c_contiguous").cast<bool>())
    notContiguous(what);
  v.readonly = !flags.attr("writeable").cast<bool>();
  v.count = obj.attr("size").cast<size_t>();
  v.address = obj.attr("__array_interface__")["data"].cast<py::tuple>()[0].cast<uint64_t>();
  return v;
}

} // namespace

ArgumentLifetimes::~ArgumentLifetimes() {
  for (void *m : dlpack_) {
    auto *managed = static_cast<dlpack::ManagedTensor *>(m);
    if (managed->deleter)
      managed->deleter(managed);
  }
}

std::string ArgName::text() const {
  return fmt::format("argument '{}' (#{}) of kernel '{}'", param, index, kernel);
}

PyObject *interned(const char *name) {
  // Never released: the names outlive every launch, and the interpreter's
  // own shutdown frees interned strings.
  PyObject *s = PyUnicode_InternFromString(name);
  if (!s)
    throw py::error_already_set();
  return s;
}

py::handle torchModule() {
  static PyObject *const torchName = interned("torch");
  // A borrowed reference: sys.modules keeps torch for the process.
  PyObject *torch = PyImport_GetModule(torchName);
  if (!torch) {
    PyErr_Clear();
    return nullptr;
  }
  Py_DECREF(torch);
  return torch;
}

py::handle torchTensorType() {
  static PyObject *const tensorName = interned("Tensor");
  static py::handle tensor; // torch.Tensor stays alive as long as torch
  if (!tensor) {
    py::handle torch = torchModule();
    if (!torch)
      return nullptr;
    tensor = PyObject_GetAttr(torch.ptr(), tensorName);
    if (!tensor)
      throw py::error_already_set();
  }
  return tensor;
}

namespace {
bool hasAttribute(py::handle obj, PyObject *name) { return PyObject_HasAttr(obj.ptr(), name) == 1; }
} // namespace

std::optional<ArrayView> viewArray(py::handle obj, const ArgName &what, ArgumentLifetimes &keep) {
  static PyObject *const cai = interned("__cuda_array_interface__"),
                         *const arrayInterface = interned("__array_interface__"),
                         *const flags = interned("flags"), *const dlpack = interned("__dlpack__");
  // torch first: its __cuda_array_interface__ is a Python property that
  // builds a dict (and for a CPU tensor raises inside hasattr).
  if (py::handle torch = torchModule())
    if (py::handle tensor = torchTensorType()) {
      const int isTensor = PyObject_IsInstance(obj.ptr(), tensor.ptr());
      if (isTensor < 0)
        throw py::error_already_set();
      if (isTensor)
        return fromTorch(obj, torch, what);
    }
  if (hasAttribute(obj, cai))
    return fromCudaArrayInterface(obj, what);
  // numpy arrays (and ml_dtypes' bfloat16 ones) are read directly; other
  // host arrays (torch CPU tensors, ...) through DLPack.
  if (hasAttribute(obj, arrayInterface) && hasAttribute(obj, flags))
    return fromNumpy(obj, what);
  if (hasAttribute(obj, dlpack))
    return fromDLPack(obj, what, keep);
  return std::nullopt;
}

Arg arrayArg(const ArrayView &view, const ParamInfo &param, const ArgName &what) {
  if (!view.dtype)
    throw py::type_error(fmt::format("{}: arrays of {} are not supported (Tegula has float16, "
                                     "bfloat16, float32, float64, int8-int64, bool and ml_dtypes' float8_e4m3fn / "
                                     "float8_e5m2)",
                                     what.text(), view.dtype_name));
  if (!param.any_dtype && *view.dtype != param.dtype)
    throw py::type_error(fmt::format("{} expects an array of {}, got one of {}", what.text(),
                                     dtype_name(param.dtype), view.dtype_name));
  if (view.on_device)
    return Arg::device(view.address, view.count, *view.dtype, view.readonly);
  return Arg::buffer(reinterpret_cast<void *>(view.address), view.count, *view.dtype, view.readonly);
}

Arg scalarArg(py::handle obj, const ParamInfo &param, const ArgName &what) {
  const char *expects = is_int(param.dtype) ? (param.dtype == DType::i1 ? "a bool" : "an int")
                                            : "a float";
  if (obj.is_none())
    throw py::type_error(fmt::format("{} expects {}, got None", what.text(), expects));
  // numpy scalars and 0-d arrays (numpy's, torch's) convert through item();
  // an array with elements is not a scalar, whatever item() would take (a
  // one-element array there is usually an argument in the wrong place).
  if (!PyBool_Check(obj.ptr()) && !PyLong_Check(obj.ptr()) && !PyFloat_Check(obj.ptr()) &&
      py::hasattr(obj, "item") && py::hasattr(obj, "dtype")) {
    if (py::hasattr(obj, "ndim") && py::cast<int64_t>(obj.attr("ndim")) != 0)
      throw py::type_error(fmt::format("{} expects {}, got a {}-d array of shape {} (a scalar is a Python number, "
                                       "a numpy scalar or a 0-d array)",
                                       what.text(), expects, py::cast<int64_t>(obj.attr("ndim")),
                                       py::str(py::tuple(obj.attr("shape"))).cast<std::string>()));
    return scalarArg(obj.attr("item")(), param, what);
  }
  if (PyBool_Check(obj.ptr()))
    return Arg(obj.cast<bool>());
  if (PyLong_Check(obj.ptr())) {
    // A float parameter takes any int as Python's float() does (10**20 is
    // an f32; the range check then says whether it is past the type's).
    if (!is_int(param.dtype)) {
      const double d = PyLong_AsDouble(obj.ptr());
      if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        throw py::value_error(fmt::format("{}: {} is too large for a floating-point number", what.text(),
                                          py::str(obj).cast<std::string>()));
      }
      return Arg(d);
    }
    long long v = 0;
    try {
      v = obj.cast<long long>();
    } catch (const py::cast_error &) {
      throw py::value_error(fmt::format("{}: {} does not fit in 64 bits", what.text(),
                                        py::str(obj).cast<std::string>()));
    }
    return Arg(v);
  }
  if (PyFloat_Check(obj.ptr())) {
    if (is_int(param.dtype))
      throw py::type_error(fmt::format("{} expects {}, got the float {}", what.text(), expects,
                                       py::repr(obj).cast<std::string>()));
    return Arg(obj.cast<double>());
  }
  throw py::type_error(fmt::format("{} expects {}, got {}", what.text(), expects,
                                   py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>()));
}

} // namespace tegula::python
