//===- Gpt.cpp - tegula._gpt: GPT-2 (models/gpt) from Python ---------------===//
//
// The C++ model as it is: GptModel's forward, backward, AdamW step, gradient
// clipping, generation and checkpoints, with numpy arrays in and out, the
// tokenizers, and the safetensors reader and writer. tegula/gpt.py wraps it
// (keyword arguments, from_pretrained); every call that launches kernels
// releases the GIL. tegula::Error becomes tegula.Error through _tegula's
// translator (tegula imports _tegula first).
//
//===----------------------------------------------------------------------===//
#include "CtrlC.h"
#include "models/gpt/Checkpoint.h"
#include "models/gpt/Model.h"
#include "models/gpt/Safetensors.h"
#include "models/gpt/TileTuner.h"
#include "models/gpt/Tokenizer.h"
#include "models/gpt/TunedTiles.h"

#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>
#include <utility>
#include <tuple>
#include <mutex>

namespace py = pybind11;
using namespace tegula;
using namespace tegula::gpt;

namespace {

using F32Array = py::array_t<float, py::array::c_style | py::array::forcecast>;

/// `values` as a new numpy array of `shape`.
F32Array toNumpy(std::vector<float> values, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  if (n != int64_t(values.size()))
    throw Error(fmt::format("tegula.gpt: {} values for an array of shape [{}]", values.size(), fmt::join(shape, ", ")));
  auto *owned = new std::vector<float>(std::move(values));
  py::capsule free(owned, [](void *p) { delete static_cast<std::vector<float> *>(p); });
  return F32Array(std::vector<py::ssize_t>(shape.begin(), shape.end()), owned->data(), free);
}

/// Token ids [B, T] (or [T]: B = 1) from any integer array or sequence:
/// (values, B, T); `what` names the argument in errors.
struct Tokens {
  std::vector<int32_t> values;
  int B = 0, T = 0;
};
Tokens tokensFrom(py::handle obj, const char *what) {
  py::array arr = py::array::ensure(obj);
  if (!arr)
    throw py::type_error(fmt::format("{}: expected an integer array of token ids, got {}", what,
                                     std::string(py::str(py::type::of(obj)))));
  if (arr.size() > 0 && arr.dtype().kind() != 'i' && arr.dtype().kind() != 'u')
    throw py::type_error(fmt::format("{}: token ids must be integers, got dtype {}", what,
                                     std::string(py::str(arr.dtype()))));
  if (arr.ndim() != 1 && arr.ndim() != 2)
    throw py::value_error(fmt::format("{}: expected [B, T] or [T] token ids, got {} dimensions", what,
                                      arr.ndim()));
  Tokens t;
  t.B = arr.ndim() == 2 ? int(arr.shape(0)) : 1;
  t.T = int(arr.shape(arr.ndim() - 1));
  // Read as the array's signedness says (uint64 past 2^63 is not negative).
  auto take = [&]<class I>(I) {
    auto ids = py::array_t<I, py::array::c_style | py::array::forcecast>::ensure(arr);
    t.values.reserve(size_t(ids.size()));
    for (py::ssize_t i = 0; i < ids.size(); ++i) {
      const I v = ids.data()[i];
      if (std::cmp_less(v, 0) || std::cmp_greater(v, std::numeric_limits<int32_t>::max()))
        throw py::value_error(fmt::format("{}: token id {} at flat index {} is not a vocabulary index", what, v, i));
      t.values.push_back(int32_t(v));
    }
  };
  if (arr.dtype().kind() == 'u')
    take(uint64_t{});
  else
    take(int64_t{});
  return t;
}

DType storageNamed(const std::string &name) {
  if (name == "float32" || name == "f32")
    return DType::f32;
  if (name == "bfloat16" || name == "bf16")
    return DType::bf16;
  throw py::value_error(fmt::format("dtype is 'float32' or 'bfloat16' (f32 master weights), not '{}'", name));
}

const char *backendName(Backend b) {
  return b == Backend::GPU ? "gpu" : b == Backend::Sim ? "sim" : "interp";
}

tl::precision precisionNamed(const std::string &name) {
  if (name == "ieee") return tl::precision::ieee;
  if (name == "tf32") return tl::precision::tf32;
  if (name == "tf32x3") return tl::precision::tf32x3;
  throw py::value_error(fmt::format("matmul is 'ieee', 'tf32' or 'tf32x3', not '{}'", name));
}

/// A model and what Python sees of it beside GptModel: its backend's name.
struct PyGpt {
  std::unique_ptr<GptModel> model;
  std::string backend, dtype, matmul;
  int B = 0, T = 0; // the last successful forward's (0: none)
  // One call at a time: calls release the GIL while kernels run, and a
  // forward may reallocate what another thread's logits() reads.
  std::unique_ptr<std::mutex> busy = std::make_unique<std::mutex>();
};

/// `f(model)` without the GIL, holding the model's lock.
template <class F> auto locked(PyGpt &g, F f) {
  py::gil_scoped_release unlocked;
  python::CtrlCStopsLaunches interruptible; // a step in the interpreter takes a while
  std::lock_guard lock(*g.busy);
  return f(*g.model);
}

/// A parameter's shape as Python sees it: wte without its padding rows (as
/// Hugging Face and checkpoints have it).
std::vector<int64_t> visibleShape(const GptModel &m, const ParamSpec &p) {
  std::vector<int64_t> shape = p.shape;
  if (p.name == "wte.weight")
    shape[0] = m.config().vocab;
  return shape;
}

/// A model made by `make` (without the GIL: it allocates and may read a
/// checkpoint) on the named backend, storage and dot precision.
template <class Make>
PyGpt makeModel(const std::string &backend, const std::string &dtype, const std::string &matmul, Make make) {
  const Backend b = parse_backend(backend);
  const DType storage = storageNamed(dtype);
  const tl::precision p = precisionNamed(matmul);
  PyGpt g;
  {
    py::gil_scoped_release unlocked;
    g.model = make(b, p, storage);
  }
  g.backend = backendName(b), g.dtype = storage == DType::bf16 ? "bfloat16" : "float32";
  g.matmul = matmul;
  return g;
}

/// Parameter `name`'s values (or its gradient's: `read`) as numpy, in its
/// visible shape.
F32Array visibleTensor(PyGpt &g, const std::string &name,
                       std::vector<float> (GptModel::*read)(const std::string &) const) {
  std::vector<int64_t> shape;
  std::vector<float> v = locked(g, [&](GptModel &m) {
    shape = visibleShape(m, m.parameter(name));
    std::vector<float> all = (m.*read)(name);
    all.resize(size_t(shape[0] * (shape.size() > 1 ? shape[1] : 1)));
    return all;
  });
  return toNumpy(std::move(v), shape);
}

py::dict memoryDict(const GptModel::Memory &m) {
  py::dict d;
  d["parameters"] = m.parameters, d["gradients"] = m.gradients, d["optimizer"] = m.optimizer;
  d["activations"] = m.activations, d["activations_per_layer"] = m.activations_per_layer;
  d["scratch"] = m.scratch, d["total"] = m.total(), d["peak"] = m.peak;
  return d;
}

/// A safetensors file's tensors as numpy arrays: floating types as float32
/// (F16, BF16, F64 converted), integers as int32.
py::dict readSafetensors(const std::string &path) {
  SafetensorsFile file = [&] {
    py::gil_scoped_release unlocked;
    return SafetensorsFile::read(path);
  }();
  py::dict tensors;
  for (const std::string &name : file.names()) {
    const SafeTensor &t = file.at(name);
    if (t.dtype == "I64" || t.dtype == "I32") {
      std::vector<int32_t> v = file.to_i32(name);
      py::array_t<int32_t> a(std::vector<py::ssize_t>(t.shape.begin(), t.shape.end()));
      std::copy(v.begin(), v.end(), a.mutable_data());
      tensors[py::str(name)] = a;
    } else {
      tensors[py::str(name)] = toNumpy(file.to_f32(name), t.shape);
    }
  }
  return tensors;
}

void writeSafetensors(const std::string &path, py::dict tensors, const std::map<std::string, std::string> &metadata,
                      const std::string &dtype) {
  std::vector<F32Array> keep;
  std::vector<TensorToWrite> out;
  for (auto [key, value] : tensors) {
    const std::string name = py::cast<std::string>(key);
    F32Array a = F32Array::ensure(value);
    if (!a)
      throw py::type_error(fmt::format("tensor '{}': expected an array of numbers", name));
    keep.push_back(a);
    std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    out.push_back({name, shape, std::span<const float>(a.data(), size_t(a.size())), dtype});
  }
  py::gil_scoped_release unlocked;
  write_safetensors(path, out, metadata);
}

/// The sizes that make two configs the same model.
std::tuple<int, int, int, int, int, int> configKey(const GptConfig &c) {
  return {c.n_layer, c.n_head, c.n_embd, c.vocab, c.vocab_padded, c.n_ctx};
}

} // namespace

PYBIND11_MODULE(_gpt, m) {
  m.doc() = "GPT-2 in Tegula (models/gpt): import tegula.gpt instead";
  py::module_::import("tegula._tegula"); // tegula.Error's translator
  python::joinCtrlC(m, /*owner=*/false);  // Ctrl-C stops this module's launches too

  py::class_<GptConfig>(m, "Config", "GPT-2's sizes (124M by default)")
      .def(py::init([](int n_layer, int n_head, int n_embd, int vocab, int vocab_padded, int n_ctx) {
             GptConfig c;
             c.n_layer = n_layer, c.n_head = n_head, c.n_embd = n_embd, c.vocab = vocab, c.n_ctx = n_ctx;
             c.vocab_padded = vocab_padded > 0 ? vocab_padded : int((vocab + 127) / 128 * 128);
             c.validate();
             return c;
           }),
           py::kw_only(), py::arg("n_layer") = 12, py::arg("n_head") = 12, py::arg("n_embd") = 768,
           py::arg("vocab") = 50257, py::arg("vocab_padded") = 0, py::arg("n_ctx") = 1024,
           "vocab_padded=0 rounds the vocabulary up to a multiple of 128 (the LM head's columns)")
      .def_readonly("n_layer", &GptConfig::n_layer)
      .def_readonly("n_head", &GptConfig::n_head)
      .def_readonly("n_embd", &GptConfig::n_embd)
      .def_readonly("vocab", &GptConfig::vocab)
      .def_readonly("vocab_padded", &GptConfig::vocab_padded)
      .def_readonly("n_ctx", &GptConfig::n_ctx)
      .def("__repr__", [](const GptConfig &c) {
        return fmt::format("tegula.gpt.Config(n_layer={}, n_head={}, n_embd={}, vocab={}, vocab_padded={}, "
                           "n_ctx={})",
                           c.n_layer, c.n_head, c.n_embd, c.vocab, c.vocab_padded, c.n_ctx);
      })
      // Equal when the sizes are (a value, like a dataclass; read-only, so hashable).
      .def("__eq__",
           [](const GptConfig &c, const py::object &other) -> py::object {
             if (!py::isinstance<GptConfig>(other))
               return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             const auto &o = other.cast<const GptConfig &>();
             return py::bool_(configKey(c) == configKey(o));
           })
      .def("__hash__", [](const GptConfig &c) { return py::hash(py::cast(configKey(c))); })
      // Picklable by every protocol: rebuilt by the (keyword-only)
      // constructor through functools.partial.
      .def("__reduce__", [](const GptConfig &c) {
        py::dict sizes;
        sizes["n_layer"] = c.n_layer, sizes["n_head"] = c.n_head, sizes["n_embd"] = c.n_embd;
        sizes["vocab"] = c.vocab, sizes["vocab_padded"] = c.vocab_padded, sizes["n_ctx"] = c.n_ctx;
        py::object partial = py::module_::import("functools").attr("partial");
        return py::make_tuple(partial(py::type::of<GptConfig>(), **sizes), py::tuple());
      });

  py::class_<PyGpt>(m, "Model")
      .def(py::init([](const GptConfig &config, const std::string &backend, const std::string &dtype,
                       const std::string &matmul) {
             return makeModel(backend, dtype, matmul, [&](Backend b, tl::precision p, DType storage) {
               return std::make_unique<GptModel>(config, b, p, storage);
             });
           }),
           py::arg("config"), py::arg("backend"), py::arg("dtype"), py::arg("matmul"))
      .def_static(
          "from_pretrained",
          [](const std::string &path, int nHead, const std::string &configJson, const std::string &backend,
             const std::string &dtype, const std::string &matmul) {
            return makeModel(backend, dtype, matmul, [&](Backend b, tl::precision p, DType storage) {
              const SafetensorsFile file = SafetensorsFile::read(path);
              auto model = std::make_unique<GptModel>(checkpoint_config(file, nHead, configJson), b, p, storage);
              model->load(file);
              return model;
            });
          },
          py::arg("path"), py::arg("n_head"), py::arg("config_json"), py::arg("backend"), py::arg("dtype"),
          py::arg("matmul"))
      .def_property_readonly("config", [](const PyGpt &g) { return g.model->config(); })
      .def_readonly("backend", &PyGpt::backend)
      .def_readonly("dtype", &PyGpt::dtype)
      .def_readonly("matmul", &PyGpt::matmul)
      .def_property_readonly("num_parameters", [](const PyGpt &g) { return g.model->num_parameters(); })
      .def_property_readonly("parameter_shapes",
                             [](const PyGpt &g) {
                               py::dict d;
                               for (const ParamSpec &p : g.model->parameters())
                                 d[py::str(p.name)] = py::tuple(py::cast(visibleShape(*g.model, p)));
                               return d;
                             })
      .def("init_random", [](PyGpt &g, uint64_t seed) { locked(g, [&](GptModel &m) { m.init_random(seed); }); },
           py::arg("seed"))
      .def("load",
           [](PyGpt &g, const std::string &path) {
             locked(g, [&](GptModel &m) { m.load(SafetensorsFile::read(path)); });
           },
           py::arg("path"))
      .def("save",
           [](PyGpt &g, const std::string &path, const std::map<std::string, std::string> &metadata) {
             locked(g, [&](GptModel &m) { m.save(path, metadata); });
           },
           py::arg("path"), py::arg("metadata"))
      .def("save_optimizer",
           [](PyGpt &g, const std::string &path, const std::map<std::string, std::string> &metadata) {
             locked(g, [&](GptModel &m) { m.save_optimizer(path, metadata); });
           },
           py::arg("path"), py::arg("metadata"))
      .def("load_optimizer",
           [](PyGpt &g, const std::string &path) {
             return locked(g, [&](GptModel &m) {
               const SafetensorsFile file = SafetensorsFile::read(path);
               m.load_optimizer(file);
               return file.metadata();
             });
           },
           py::arg("path"))
      .def_property_readonly("optimizer_steps",
                             [](PyGpt &g) { return locked(g, [](GptModel &m) { return m.optimizer_steps(); }); })
      .def("parameter", [](PyGpt &g, const std::string &name) { return visibleTensor(g, name, &GptModel::read_parameter); },
           py::arg("name"))
      .def("set_parameter",
           [](PyGpt &g, const std::string &name, py::handle value) {
             const ParamSpec &p = g.model->parameter(name);
             const std::vector<int64_t> shape = visibleShape(*g.model, p);
             F32Array a = F32Array::ensure(value);
             if (!a)
               throw py::type_error(fmt::format("parameter '{}': expected an array of numbers", name));
             const std::vector<int64_t> got(a.shape(), a.shape() + a.ndim());
             if (got != shape)
               throw py::value_error(fmt::format("parameter '{}' is [{}], got an array of shape [{}]", name,
                                                 fmt::join(shape, ", "), fmt::join(got, ", ")));
             std::vector<float> values(a.data(), a.data() + a.size());
             values.resize(size_t(p.numel()), 0.0f); // wte's padding rows stay 0
             locked(g, [&](GptModel &m) { m.write_parameter(name, values); });
           },
           py::arg("name"), py::arg("value"))
      .def("gradient", [](PyGpt &g, const std::string &name) { return visibleTensor(g, name, &GptModel::read_gradient); },
           py::arg("name"))
      .def("forward",
           [](PyGpt &g, py::handle tokens, py::handle targets) {
             Tokens x = tokensFrom(tokens, "tokens"), y;
             if (!targets.is_none()) {
               y = tokensFrom(targets, "targets");
               if (y.B != x.B || y.T != x.T)
                 throw py::value_error(fmt::format("targets are [{}, {}], tokens [{}, {}]: they must match", y.B,
                                                   y.T, x.B, x.T));
             }
             return locked(g, [&](GptModel &m) {
               g.B = g.T = 0; // until this forward has run
               const float loss = m.forward(x.values, y.values, x.B, x.T);
               g.B = x.B, g.T = x.T;
               return loss;
             });
           },
           py::arg("tokens"), py::arg("targets"))
      .def("logits",
           [](PyGpt &g) {
             int B = 0, T = 0;
             std::vector<float> l = locked(g, [&](GptModel &m) {
               if (!g.B)
                 throw Error("GPT: logits() before a forward() that ran");
               B = g.B, T = g.T;
               return m.logits();
             });
             return toNumpy(std::move(l), {B, T, g.model->config().vocab});
           })
      .def("block_output",
           [](PyGpt &g, int layer) {
             int B = 0, T = 0;
             std::vector<float> out = locked(g, [&](GptModel &m) {
               if (!g.B)
                 throw Error("GPT: block_output() before a forward() that ran");
               B = g.B, T = g.T;
               return m.block_output(layer);
             });
             return toNumpy(std::move(out), {B, T, g.model->config().n_embd});
           },
           py::arg("layer"))
      .def("zero_grad", [](PyGpt &g) { locked(g, [](GptModel &m) { m.zero_grad(); }); })
      .def("backward", [](PyGpt &g) { locked(g, [](GptModel &m) { m.backward(); }); })
      .def("clip_grad_norm",
           [](PyGpt &g, float maxNorm) { return locked(g, [&](GptModel &m) { return m.clip_grad_norm(maxNorm); }); },
           py::arg("max_norm"))
      .def("step",
           [](PyGpt &g, float lr, float beta1, float beta2, float eps, float weightDecay, bool stochastic) {
             locked(g, [&](GptModel &m) {
               m.step({.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weightDecay,
                       .stochastic_rounding = stochastic});
             });
           },
           py::arg("lr"), py::arg("beta1"), py::arg("beta2"), py::arg("eps"), py::arg("weight_decay"),
           py::arg("stochastic_rounding") = false)
      .def("generate",
           [](PyGpt &g, py::handle prompt, int count, float temperature, int topK, float topP, uint64_t seed,
              const std::vector<int32_t> &stopTokens) {
             Tokens p = tokensFrom(prompt, "prompt");
             if (p.B != 1)
               throw py::value_error(fmt::format("prompt: one sequence of token ids, got {} rows", p.B));
             if (count < 0)
               throw py::value_error(fmt::format("max_new_tokens must be >= 0, got {}", count));
             std::vector<int32_t> out = locked(g, [&](GptModel &m) {
               return m.generate(p.values, count,
                                 {.temperature = temperature, .top_k = topK, .top_p = topP, .seed = seed,
                                  .stop_tokens = stopTokens});
             });
             return py::array_t<int32_t>(py::ssize_t(out.size()), out.data());
           },
           py::arg("prompt"), py::arg("count"), py::arg("temperature"), py::arg("top_k"), py::arg("top_p"),
           py::arg("seed"), py::arg("stop_tokens") = std::vector<int32_t>{})
      .def("memory", [](PyGpt &g) { return memoryDict(locked(g, [](GptModel &m) { return m.memory(); })); })
      .def("training_flops_per_token", [](const PyGpt &g, int T) { return g.model->training_flops_per_token(T); },
           py::arg("T"))
      .def("set_warp_specialize",
           [](PyGpt &g, bool on) { locked(g, [&](GptModel &m) { m.set_warp_specialize(on); }); }, py::arg("on"))
      .def("set_overlap_weight_gradients",
           [](PyGpt &g, bool on) { locked(g, [&](GptModel &m) { m.set_overlap_weight_gradients(on); }); },
           py::arg("on"))
      .def("set_stream_k_weight_gradients",
           [](PyGpt &g, bool on) { locked(g, [&](GptModel &m) { m.set_stream_k_weight_gradients(on); }); },
           py::arg("on"))
      .def("override_tiles",
           [](PyGpt &g, const std::string &overrides) {
             return locked(g, [&](GptModel &m) {
               m.set_tiles(m.tiles().with(tile_overrides_from(overrides))); // "@FILE": tegula-gpt tune's
               return m.tiles().str();
             });
           },
           py::arg("overrides"))
      .def("use_tuned_tiles",
           [](PyGpt &g, int batch, int seq) {
             if (g.backend != "gpu")
               throw Error("use_tuned_tiles reads the tiles tegula-gpt tune kept for a GPU; this model runs on the "
                           "'" + g.backend + "' backend");
             if (batch < 1 || seq < 1)
               throw py::value_error(fmt::format("use_tuned_tiles: batch and seq are at least 1, not {} and {}",
                                                 batch, seq));
             const tl::precision p = precisionNamed(g.matmul);
             return locked(g, [&](GptModel &m) {
               std::string note;
               const std::string tiles =
                   resolve_tiles("auto", TuningSetup::of(m, p, batch, seq), note, "the tiles stay as they are");
               m.set_tiles(m.tiles().with(tiles));
               return note;
             });
           },
           py::arg("batch"), py::arg("seq"))
      .def("tiles", [](PyGpt &g) { return locked(g, [](GptModel &m) { return m.tiles().str(); }); });

  m.def("learning_rate", &GptModel::learning_rate, py::kw_only(), py::arg("step"), py::arg("warmup"),
        py::arg("total"), py::arg("max_lr"), py::arg("min_lr"),
        "GPT-2's schedule: linear warm-up over `warmup` steps to max_lr, then cosine decay to min_lr at `total`");

  py::class_<BpeTokenizer>(m, "BpeTokenizer", "GPT-2's byte-level BPE (vocab.json + merges.txt)")
      .def_static("load", &BpeTokenizer::load, py::arg("vocab_json"), py::arg("merges_txt"))
      .def("encode", [](const BpeTokenizer &t, const std::string &text) { return t.encode(text); }, py::arg("text"))
      .def("decode", [](const BpeTokenizer &t, const std::vector<int32_t> &ids) { return py::bytes(t.decode(ids)); },
           py::arg("ids"))
      .def_property_readonly("vocab_size", &BpeTokenizer::vocab_size);
  m.def("byte_encode", [](const std::string &text) { return ByteTokenizer::encode(text); }, py::arg("text"));
  m.def("byte_decode", [](const std::vector<int32_t> &ids) { return py::bytes(ByteTokenizer::decode(ids)); },
        py::arg("ids"));

  m.def("read_safetensors", &readSafetensors, py::arg("path"));
  m.def("write_safetensors", &writeSafetensors, py::arg("path"), py::arg("tensors"), py::arg("metadata"),
        py::arg("dtype"));
}
