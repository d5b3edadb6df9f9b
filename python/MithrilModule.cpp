//===- MithrilModule.cpp - the _mithril Python extension ------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Python builds mithril IR through ModelBuilder and compiles it through the
// same registered pipeline as mithril-run; nothing about ops or shapes is
// decided here. Errors become mithril.MithrilError with the diagnostics.
//
//===----------------------------------------------------------------------===//

#include "mithril/Builder/ModelBuilder.h"
#include "mithril/Pipelines/Pipelines.h"
#include "mithril/Runtime/Array.h"
#include "mithril/Runtime/CompiledModel.h"
#include "mithril/Runtime/Distributed.h"
#include "mithril/Support/BFloat16.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <cstring>
#include <map>

namespace py = pybind11;
using namespace mlir;
using namespace mithril;
using namespace mithril::runtime;

namespace {

/// The Python exception type, set at module import.
py::object errorType;

/// mithril.errors.OutOfMemoryError (a MemoryError), set at module import.
py::object outOfMemoryType;

/// NumPy's allocator interface (numpy/ndarraytypes.h, version 1, NumPy
/// 1.22 and later): declared here, as pybind11 reaches NumPy's C API
/// without its headers.
struct NumpyAllocator {
  void *ctx;
  void *(*malloc)(void *ctx, size_t size);
  void *(*calloc)(void *ctx, size_t count, size_t elementSize);
  void *(*realloc)(void *ctx, void *ptr, size_t size);
  void (*free)(void *ctx, void *ptr, size_t size);
};
struct NumpyMemHandler {
  char name[127];
  uint8_t version;
  NumpyAllocator allocator;
};

/// Array data 64 bytes aligned, as the compiled kernels' 512-bit loads want
/// (NumPy's own is 16: a weight streamed by a matrix-vector kernel then
/// splits a cache line every load; the MLP 784-512-512-10 at batch 16 took
/// 0.22 ms instead of 0.17 on an Intel Xeon core with avx512f and AMX). Each
/// block keeps the start of its allocation just before the aligned data.
constexpr size_t kArrayAlignment = 64;
constexpr size_t kArraySlack = kArrayAlignment + sizeof(void *);

/// The aligned data's place in the block at `base`.
char *alignedIn(void *base) {
  auto start = reinterpret_cast<uintptr_t>(base) + sizeof(void *);
  return reinterpret_cast<char *>((start + kArrayAlignment - 1) & ~(kArrayAlignment - 1));
}

void *alignWithin(void *base) {
  char *aligned = alignedIn(base);
  reinterpret_cast<void **>(aligned)[-1] = base;
  return aligned;
}

void *baseOf(void *ptr) { return reinterpret_cast<void **>(ptr)[-1]; }

/// As NumPy's own allocator does, large blocks ask for transparent huge
/// pages: without them a product over 2048 x 2048 float64 matrices waits on
/// page walks (11% of its time on an Intel Xeon core).
void *adviseHuge(void *data, size_t size) {
  mithril::runtime::adviseHugePages(data, size);
  return data;
}

void *alignedMalloc(void *, size_t size) {
  void *base = std::malloc(size + kArraySlack);
  return base ? adviseHuge(alignWithin(base), size) : nullptr;
}

void *alignedCalloc(void *, size_t count, size_t elementSize) {
  if (elementSize && count > (SIZE_MAX - kArraySlack) / elementSize)
    return nullptr;
  // calloc keeps large zero blocks lazily mapped.
  void *base = std::calloc(1, count * elementSize + kArraySlack);
  return base ? adviseHuge(alignWithin(base), count * elementSize) : nullptr;
}

void *alignedRealloc(void *, void *ptr, size_t size) {
  if (!ptr)
    return alignedMalloc(nullptr, size);
  void *old = baseOf(ptr);
  size_t offset = static_cast<char *>(ptr) - static_cast<char *>(old);
  void *base = std::realloc(old, size + kArraySlack);
  if (!base)
    return nullptr;
  // The data moved with the block, at its old offset from the start, which
  // may no longer be the aligned one (moved first: the start's pointer may
  // fall inside the data's old place).
  char *aligned = alignedIn(base);
  char *moved = static_cast<char *>(base) + offset;
  if (moved != aligned)
    std::memmove(aligned, moved, size);
  return adviseHuge(alignWithin(base), size);
}

void alignedFree(void *, void *ptr, size_t) {
  if (ptr)
    std::free(baseOf(ptr));
}

NumpyMemHandler alignedHandler = {
    "mithril_aligned_64", 1, {nullptr, alignedMalloc, alignedCalloc, alignedRealloc, alignedFree}};

/// Makes NumPy allocate the data of the arrays it creates from now on (in
/// the calling context) 64 bytes aligned; whether it took.
bool alignNumpyAllocations() {
  py::object core;
  for (const char *name : {"numpy._core._multiarray_umath", "numpy.core._multiarray_umath"}) {
    try {
      core = py::module_::import(name);
      break;
    } catch (py::error_already_set &) {
    }
  }
  if (!core || !py::hasattr(core, "_ARRAY_API") || !py::hasattr(core, "get_handler_name"))
    return false;
  // PyDataMem_SetHandler is entry 304 of NumPy's C API table (1.22 on).
  auto table = static_cast<void **>(PyCapsule_GetPointer(core.attr("_ARRAY_API").ptr(), nullptr));
  if (!table) {
    PyErr_Clear();
    return false;
  }
  using SetHandler = PyObject *(*)(PyObject *);
  auto setHandler = reinterpret_cast<SetHandler>(table[304]);
  py::capsule handler(static_cast<void *>(&alignedHandler), "mem_handler");
  PyObject *previous = setHandler(handler.ptr());
  if (!previous) {
    PyErr_Clear();
    return false;
  }
  Py_DECREF(previous);
  return py::str(core.attr("get_handler_name")()).cast<std::string>() == alignedHandler.name;
}

[[noreturn]] void raise(const std::string &message);

Group parseGroup(const std::string &name) {
  if (name == "world")
    return Group::World;
  if (name == "data")
    return Group::Data;
  if (name == "tensor")
    return Group::Tensor;
  throw py::value_error("unknown group '" + name + "' (world, data or tensor)");
}

[[noreturn]] void raise(const std::string &message) {
  // The runtime's allocation failures say so first (CompiledModel::run).
  bool outOfMemory = llvm::StringRef(message).starts_with("out of memory");
  PyErr_SetString((outOfMemory ? outOfMemoryType : errorType).ptr(), message.c_str());
  throw py::error_already_set();
}

/// DataParallelPlan.combine's collectives and arithmetic, in the runtime
/// rather than in numpy: they run right after a compiled step has swept the
/// caches, where its two dozen numpy calls took 0.1 ms a step (Zen 4; 15 us
/// warm).
py::list gatherOutputs(const std::vector<py::array> &parts, const std::vector<std::string> &partial,
                       double weight, const std::string &group) {
  if (parts.size() != partial.size())
    throw py::value_error("gather_outputs: one 'partial' entry per part");
  using Combine = OutputPart::Combine;
  using Element = OutputPart::Element;
  std::vector<OutputPart> views;
  for (size_t i = 0; i < parts.size(); ++i) {
    const py::array &part = parts[i];
    if (!(part.flags() & py::array::c_style))
      throw py::type_error("gather_outputs takes C-contiguous arrays");
    OutputPart view{Combine::Concatenate, Element::F32, part.data()};
    if (partial[i].empty()) {
      if (part.ndim() == 0)
        throw py::value_error("gather_outputs: a 0-d part cannot be concatenated");
      view.bytes = part.nbytes();
      views.push_back(view);
      continue;
    }
    if (partial[i] != "sum" && partial[i] != "mean")
      throw py::value_error("gather_outputs: partial is '', 'sum' or 'mean', not '" + partial[i] +
                            "'");
    view.combine = partial[i] == "mean" ? Combine::WeightedSum : Combine::Sum;
    py::dtype dt = part.dtype();
    if (dt.is(py::dtype::of<float>()))
      view.element = Element::F32;
    else if (dt.is(py::dtype::of<double>()))
      view.element = Element::F64;
    else if (dt.is(py::dtype::of<int32_t>()))
      view.element = Element::I32;
    else if (dt.is(py::dtype::of<int64_t>()))
      view.element = Element::I64;
    else
      throw py::type_error("gather_outputs sums float32, float64, int32 and int64 parts");
    view.count = part.size();
    views.push_back(view);
  }
  Group g = parseGroup(group);
  llvm::Expected<std::vector<std::vector<char>>> combined = [&] {
    py::gil_scoped_release release;
    return combineOutputs(views, weight, g);
  }();
  if (!combined)
    raise(llvm::toString(combined.takeError()));
  py::list results;
  for (size_t i = 0; i < parts.size(); ++i) {
    const py::array &part = parts[i];
    const std::vector<char> &bytes = (*combined)[i];
    std::vector<py::ssize_t> shape(part.shape(), part.shape() + part.ndim());
    if (views[i].combine == Combine::Concatenate) {
      py::ssize_t rowBytes = part.itemsize();
      for (py::ssize_t d = 1; d < part.ndim(); ++d)
        rowBytes *= part.shape(d);
      if (rowBytes == 0 || static_cast<py::ssize_t>(bytes.size()) % rowBytes != 0)
        raise("gather_outputs: the ranks' parts of output " + std::to_string(i) +
              " differ in their rows' size");
      shape[0] = static_cast<py::ssize_t>(bytes.size()) / rowBytes;
    }
    py::array whole(part.dtype(), shape);
    std::memcpy(whole.mutable_data(), bytes.data(), bytes.size());
    results.append(whole);
  }
  return results;
}

/// Collects diagnostics while in scope, to put them in an exception.
class Diagnostics {
public:
  explicit Diagnostics(MLIRContext &ctx)
      : handler(&ctx, [this](Diagnostic &diag) {
          llvm::raw_string_ostream os(text);
          if (!text.empty())
            os << "\n";
          Location loc = diag.getLocation();
          if (auto name = dyn_cast<NameLoc>(loc))
            os << name.getName().str() << ": ";
          os << diag;
          return success();
        }) {}
  std::string take(const std::string &fallback) {
    std::string t = text.empty() ? fallback : text;
    text.clear();
    return t;
  }

private:
  std::string text;
  ScopedDiagnosticHandler handler;
};

std::optional<DType> parseDType(const std::string &name) {
  if (name == "float32" || name == "f32")
    return DType::F32;
  if (name == "float64" || name == "f64")
    return DType::F64;
  if (name == "int32" || name == "i32")
    return DType::I32;
  if (name == "int64" || name == "i64")
    return DType::I64;
  if (name == "bool" || name == "i1")
    return DType::Bool;
  if (name == "float16" || name == "f16")
    return DType::F16;
  if (name == "bfloat16" || name == "bf16")
    return DType::BF16;
  if (name == "int8" || name == "i8")
    return DType::I8;
  if (name == "int16" || name == "i16")
    return DType::I16;
  return std::nullopt;
}

DType dtypeOf(const py::array &array) {
  py::dtype dt = array.dtype();
  if (dt.is(py::dtype::of<float>()))
    return DType::F32;
  if (dt.is(py::dtype::of<double>()))
    return DType::F64;
  if (dt.is(py::dtype::of<int32_t>()))
    return DType::I32;
  if (dt.is(py::dtype::of<int64_t>()))
    return DType::I64;
  if (dt.is(py::dtype::of<int8_t>()))
    return DType::I8;
  if (dt.is(py::dtype::of<int16_t>()))
    return DType::I16;
  if (dt.is(py::dtype::of<bool>()))
    return DType::Bool;
  if (dt.is(py::dtype("float16")))
    return DType::F16;
  // bfloat16 travels as its bit patterns (the package converts).
  if (dt.is(py::dtype::of<uint16_t>()))
    return DType::BF16;
  raise("unsupported array dtype " + std::string(py::str(dt)) +
        " (supported: float32, float64, float16, int8, int16, int32, int64, bool)");
}

/// A module under construction, holding its own context.
class PyModule {
public:
  PyModule() : context(createContext()), diagnostics(*context) {
    module = ModuleOp::create(UnknownLoc::get(context.get()));
  }

  MLIRContext &ctx() { return *context; }
  ModuleOp get() { return *module; }
  Diagnostics &diags() { return diagnostics; }

  /// The module as text; with debug info, the op and terminal paths that
  /// diagnostics name survive the trip through text.
  std::string text(bool debugInfo) {
    std::string s;
    llvm::raw_string_ostream os(s);
    OpPrintingFlags flags;
    if (debugInfo)
      flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
    module->print(os, flags);
    return s;
  }

private:
  std::unique_ptr<MLIRContext> context;
  Diagnostics diagnostics;
  OwningOpRef<ModuleOp> module;
};

/// One model being built; values are handed to Python as integer ids.
class PyModelBuilder {
public:
  PyModelBuilder(std::shared_ptr<PyModule> module, const std::string &name)
      : module(module), builder(module->get(), name) {}

  size_t addInput(const std::string &name, const std::string &kind,
                  const std::vector<int64_t> &shape, const std::string &dtype) {
    std::optional<InputKind> k = symbolizeInputKind(kind);
    if (!k)
      raise("unknown terminal role '" + kind + "' (expected data, param or const)");
    auto type = tensorType(shape, dtype);
    auto v = builder.addInput(name, *k, type);
    if (failed(v))
      raise(module->diags().take("cannot add input '" + name + "'"));
    return keep(*v);
  }

  std::vector<size_t> addOp(const std::string &op, const std::vector<size_t> &operands,
                            const py::dict &attrs, const std::string &name) {
    SmallVector<Value> values = lookup(operands);
    SmallVector<NamedAttribute> attributes;
    Builder b(&module->ctx());
    for (auto item : attrs) {
      std::string key = py::str(item.first);
      attributes.push_back(b.getNamedAttr(key, toAttribute(key, item.second)));
    }
    auto results = builder.addOp(op, values, attributes, name);
    if (failed(results))
      raise(module->diags().take("cannot add '" + op + "'"));
    std::vector<size_t> ids;
    for (Value r : *results)
      ids.push_back(keep(r));
    return ids;
  }

  size_t addConstant(const py::array &array, const std::string &name) {
    py::array c = py::array::ensure(array, py::array::c_style);
    DType dtype = dtypeOf(c);
    std::vector<int64_t> shape(c.shape(), c.shape() + c.ndim());
    auto type = RankedTensorType::get(shape, dtypeToType(dtype, &module->ctx()));
    size_t bytes = c.nbytes();
    DenseElementsAttr attr;
    if (dtype == DType::Bool) {
      std::vector<bool> bits(static_cast<const bool *>(c.data()),
                             static_cast<const bool *>(c.data()) + c.size());
      SmallVector<bool> values(bits.begin(), bits.end());
      attr = DenseElementsAttr::get(type, ArrayRef<bool>(values));
    } else {
      attr = DenseElementsAttr::getFromRawBuffer(
          type, ArrayRef<char>(static_cast<const char *>(c.data()), bytes));
    }
    return keep(builder.addConstant(attr, name));
  }

  std::vector<size_t> addInstance(const std::string &instanceName, const std::string &callee,
                                  const std::vector<std::pair<std::string, size_t>> &bindings) {
    auto model = module->get().lookupSymbol<ModelOp>(callee);
    if (!model)
      raise("no model named '" + callee + "' has been built");
    SmallVector<std::pair<std::string, Value>> bound;
    for (const auto &[terminal, id] : bindings)
      bound.emplace_back(terminal, lookup({id})[0]);
    auto results = builder.addInstance(instanceName, model, bound);
    if (failed(results))
      raise(module->diags().take("cannot instantiate '" + callee + "'"));
    std::vector<size_t> ids;
    for (Value r : *results)
      ids.push_back(keep(r));
    return ids;
  }

  void addOutput(const std::string &name, size_t value) {
    if (failed(builder.addOutput(name, lookup({value})[0])))
      raise(module->diags().take("cannot add output '" + name + "'"));
  }

  void finish() {
    if (failed(builder.finish()))
      raise(module->diags().take("the model does not verify"));
  }

  /// Shape (None for a dynamic dimension) and dtype name of a value.
  py::tuple typeOf(size_t value) {
    auto t = cast<RankedTensorType>(lookup({value})[0].getType());
    py::list shape;
    for (int64_t d : t.getShape())
      shape.append(ShapedType::isDynamic(d) ? py::object(py::none()) : py::object(py::int_(d)));
    std::optional<DType> dtype = typeToDType(t.getElementType());
    return py::make_tuple(py::tuple(shape), dtype ? std::string(dtypeName(*dtype)) : "?");
  }

private:
  RankedTensorType tensorType(const std::vector<int64_t> &shape, const std::string &dtype) {
    std::optional<DType> d = parseDType(dtype);
    if (!d)
      raise("unknown dtype '" + dtype + "'");
    SmallVector<int64_t> dims;
    for (int64_t s : shape)
      dims.push_back(s < 0 ? ShapedType::kDynamic : s);
    return RankedTensorType::get(dims, dtypeToType(*d, &module->ctx()));
  }

  Attribute toAttribute(const std::string &key, py::handle value) {
    Builder b(&module->ctx());
    if (py::isinstance<py::bool_>(value))
      return b.getBoolAttr(value.cast<bool>());
    if (py::isinstance<py::int_>(value))
      return b.getI64IntegerAttr(value.cast<int64_t>());
    if (py::isinstance<py::float_>(value))
      return b.getF64FloatAttr(value.cast<double>());
    if (py::isinstance<py::str>(value)) {
      std::string s = value.cast<std::string>();
      if (key == "element_type") {
        std::optional<DType> d = parseDType(s);
        if (!d)
          raise("unknown dtype '" + s + "'");
        return TypeAttr::get(dtypeToType(*d, &module->ctx()));
      }
      return b.getStringAttr(s);
    }
    if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
      SmallVector<int64_t> ints;
      for (py::handle item : value) {
        if (!py::isinstance<py::int_>(item) || py::isinstance<py::bool_>(item))
          raise("attribute '" + key + "' must be a list of integers");
        ints.push_back(item.cast<int64_t>());
      }
      return b.getDenseI64ArrayAttr(ints);
    }
    raise("attribute '" + key + "' has an unsupported Python type " +
          std::string(py::str(value.get_type())));
  }

  size_t keep(Value v) {
    values.push_back(v);
    return values.size() - 1;
  }
  SmallVector<Value> lookup(const std::vector<size_t> &ids) {
    SmallVector<Value> out;
    for (size_t id : ids) {
      if (id >= values.size())
        raise("invalid value id " + std::to_string(id));
      out.push_back(values[id]);
    }
    return out;
  }

  std::shared_ptr<PyModule> module;
  ModelBuilder builder;
  std::vector<Value> values;
};

py::dict terminalInfo(const TerminalInfo &t) {
  py::dict d;
  d["name"] = t.name;
  d["kind"] = std::string(stringifyInputKind(t.kind));
  d["dtype"] = std::string(dtypeName(t.dtype));
  py::list shape;
  for (int64_t dim : t.shape)
    shape.append(ShapedType::isDynamic(dim) ? py::object(py::none()) : py::object(py::int_(dim)));
  d["shape"] = py::tuple(shape);
  if (t.tensorSplit >= 0) {
    d["tensor_split"] = t.tensorSplit;
    d["tensor_blocks"] = t.tensorBlocks;
  }
  if (!t.inPlaceOf.empty())
    d["in_place_of"] = t.inPlaceOf;
  return d;
}

CompileOptions makeOptions(const std::string &entry, const std::vector<std::string> &shapes,
                           const std::vector<std::string> &discard, const std::string &sourceName,
                           bool gradients = false, const std::vector<std::string> &wrt = {},
                           const std::vector<std::string> &seeds = {},
                           const std::string &optimizer = "", double momentum = 0.0,
                           double weightDecay = 0.0) {
  CompileOptions options;
  options.optimizer = optimizer;
  options.momentum = momentum;
  options.weightDecay = weightDecay;
  options.gradients = gradients;
  options.wrt = wrt;
  options.seeds = seeds;
  options.entry = entry;
  options.shapes = shapes;
  options.discard = discard;
  options.sourceName = sourceName;
  return options;
}

/// Checks an array against a terminal; returns a view of its data. The array
/// must already be C-contiguous with the terminal's dtype (Python converts).
TensorView viewOf(const py::array &array, const TerminalInfo &t, const char *role) {
  if (!(array.flags() & py::array::c_style))
    raise(std::string(role) + " '" + t.name + "' must be C-contiguous");
  DType dtype = dtypeOf(array);
  std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
  bool fits = shape.size() == t.shape.size();
  for (size_t i = 0; fits && i < shape.size(); ++i)
    fits = ShapedType::isDynamic(t.shape[i]) || shape[i] == t.shape[i];
  if (dtype != t.dtype || !fits)
    raise(std::string(role) + " '" + t.name + "': expected " + dtypeName(t.dtype).str() + " " +
          runtime::formatShape(t.shape) + ", got " + dtypeName(dtype).str() + " " +
          runtime::formatShape(shape));
  return TensorView{const_cast<void *>(array.data()), dtype,
                    llvm::SmallVector<int64_t>(shape.begin(), shape.end())};
}

/// evaluate()'s common call (physical.py's fast plan: a static CPU model, every
/// input an ndarray of its compiled dtype and shape under the model's own
/// name) as one native step: inputs looked up in the two dicts, checked, fresh
/// outputs, the run, the result dict. A model that streams more than the L2
/// holds (the MLP's 2.6 MB of weights) leaves the caches cold for whatever runs
/// between its calls: the same steps in Python took 33 us there (2.7 warm),
/// here a few. None where the call is not a common one: physical.py's general
/// path then runs and reports what is wrong.
class CommonCall {
public:
  /// `inputs`: (name, dtype, shape) in the compiled order; `outputs`: (shape,
  /// dtype); `outputNames`: the result's keys; `dictType`: its dict subclass.
  CommonCall(const CompiledModel &model, const py::list &inputs, const py::list &outputs,
             const py::list &outputNames, py::object dictType)
      : model(model), dictType(std::move(dictType)) {
    if (inputs.size() != model.inputs().size() || outputs.size() != model.outputs().size() ||
        outputNames.size() != outputs.size())
      raise("CommonCall: the plan does not match the compiled terminals");
    for (py::handle entry : inputs) {
      auto fields = entry.cast<py::tuple>();
      py::str name = fields[0].cast<py::str>();
      PyUnicode_InternInPlace(&name.ptr());
      inputNames.push_back(name);
      inputTypes.push_back(py::dtype::from_args(fields[1]));
      inputShapes.push_back(fields[2].cast<std::vector<int64_t>>());
    }
    for (auto [entry, name] : llvm::zip(outputs, outputNames)) {
      auto fields = entry.cast<py::tuple>();
      outputShapes.push_back(fields[0].cast<std::vector<py::ssize_t>>());
      outputTypes.push_back(py::dtype::from_args(fields[1]));
      this->outputNames.push_back(py::reinterpret_borrow<py::object>(name));
    }
  }

  py::object operator()(py::handle params, py::handle data) const {
    PyObject *p = params.is_none() ? nullptr : params.ptr();
    PyObject *d = data.is_none() ? nullptr : data.ptr();
    if ((p && !PyDict_Check(p)) || (d && !PyDict_Check(d)))
      return py::none();
    if ((p ? PyDict_GET_SIZE(p) : 0) + (d ? PyDict_GET_SIZE(d) : 0) !=
        static_cast<py::ssize_t>(inputNames.size()))
      return py::none();
    auto &api = py::detail::npy_api::get();
    llvm::SmallVector<TensorView, 8> in(inputNames.size());
    // References to the inputs while the run releases the GIL: another
    // thread may drop the dicts' meanwhile.
    llvm::SmallVector<py::object, 8> held;
    for (size_t i = 0; i < inputNames.size(); ++i) {
      PyObject *name = inputNames[i].ptr();
      PyObject *value = d ? PyDict_GetItemWithError(d, name) : nullptr;
      if (value && p && PyDict_Contains(p, name))
        return py::none(); // given twice
      if (!value && !PyErr_Occurred() && p)
        value = PyDict_GetItemWithError(p, name);
      if (PyErr_Occurred())
        throw py::error_already_set();
      if (!value || Py_TYPE(value) != reinterpret_cast<PyTypeObject *>(api.PyArray_Type_))
        return py::none();
      auto *array = py::detail::array_proxy(value);
      const std::vector<int64_t> &shape = inputShapes[i];
      if (array->nd != static_cast<int>(shape.size()) ||
          !(array->flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) ||
          !api.PyArray_EquivTypes_(array->descr, inputTypes[i].ptr()))
        return py::none();
      for (size_t k = 0; k < shape.size(); ++k)
        if (array->dimensions[k] != shape[k])
          return py::none();
      in[i] = TensorView{array->data, model.inputs()[i].dtype,
                         llvm::SmallVector<int64_t>(shape.begin(), shape.end())};
      held.push_back(py::reinterpret_borrow<py::object>(value));
    }
    llvm::SmallVector<py::array, 2> results;
    llvm::SmallVector<TensorView, 2> out;
    for (size_t i = 0; i < outputShapes.size(); ++i) {
      results.emplace_back(outputTypes[i], outputShapes[i]);
      out.push_back(
          TensorView{results.back().mutable_data(), model.outputs()[i].dtype,
                     llvm::SmallVector<int64_t>(outputShapes[i].begin(), outputShapes[i].end())});
    }
    llvm::Error err = llvm::Error::success();
    {
      py::gil_scoped_release release;
      err = model.run(in, out);
    }
    if (err)
      raise(llvm::toString(std::move(err)));
    py::object result = dictType();
    for (size_t i = 0; i < results.size(); ++i)
      if (PyDict_SetItem(result.ptr(), outputNames[i].ptr(), results[i].ptr()) != 0)
        throw py::error_already_set();
    return result;
  }

private:
  const CompiledModel &model;
  py::object dictType;
  std::vector<py::str> inputNames;
  std::vector<py::dtype> inputTypes;
  std::vector<std::vector<int64_t>> inputShapes;
  std::vector<py::dtype> outputTypes;
  std::vector<std::vector<py::ssize_t>> outputShapes;
  std::vector<py::object> outputNames;
};

} // namespace

PYBIND11_MODULE(_mithril, m) {
  m.doc() = "Mithril-MLIR compiler core";
  errorType = py::reinterpret_borrow<py::object>(
      py::module_::import("mithril.errors").attr("MithrilError"));
  outOfMemoryType = py::reinterpret_borrow<py::object>(
      py::module_::import("mithril.errors").attr("OutOfMemoryError"));
  m.def("align_numpy_allocations", &alignNumpyAllocations,
        "Makes NumPy allocate array data 64 bytes aligned from now on (in the calling "
        "context); whether it took");

  py::class_<PyModule, std::shared_ptr<PyModule>>(m, "Module")
      .def(py::init<>())
      .def("text", &PyModule::text, py::arg("debug_info") = true, "The module as mithril IR text");

  py::class_<PyModelBuilder>(m, "ModelBuilder")
      .def(py::init<std::shared_ptr<PyModule>, const std::string &>(), py::arg("module"),
           py::arg("name"))
      .def("add_input", &PyModelBuilder::addInput, py::arg("name"), py::arg("kind"),
           py::arg("shape"), py::arg("dtype"))
      .def("add_op", &PyModelBuilder::addOp, py::arg("op"), py::arg("operands"),
           py::arg("attrs") = py::dict(), py::arg("name") = "")
      .def("add_constant", &PyModelBuilder::addConstant, py::arg("value"), py::arg("name") = "")
      .def("add_instance", &PyModelBuilder::addInstance, py::arg("name"), py::arg("callee"),
           py::arg("bindings"))
      .def("add_output", &PyModelBuilder::addOutput, py::arg("name"), py::arg("value"))
      .def("finish", &PyModelBuilder::finish)
      .def("type_of", &PyModelBuilder::typeOf, py::arg("value"));

  py::class_<CommonCall>(m, "CommonCall")
      .def("__call__", &CommonCall::operator(), py::arg("params").none(true),
           py::arg("data").none(true));

  py::class_<CompiledModel>(m, "CompiledModel")
      .def_property_readonly("entry", &CompiledModel::entry)
      .def_property_readonly("inputs",
                             [](const CompiledModel &c) {
                               py::list l;
                               for (const TerminalInfo &t : c.inputs())
                                 l.append(terminalInfo(t));
                               return l;
                             })
      .def_property_readonly("outputs",
                             [](const CompiledModel &c) {
                               py::list l;
                               for (const TerminalInfo &t : c.outputs())
                                 l.append(terminalInfo(t));
                               return l;
                             })
      .def_property_readonly("discarded", &CompiledModel::discarded)
      .def_property_readonly("logical_ir", &CompiledModel::logicalIR)
      .def_property_readonly("timings",
                             [](const CompiledModel &c) {
                               py::list l;
                               for (const PhaseTiming &t : c.timings())
                                 l.append(py::make_tuple(t.phase, t.seconds));
                               return l;
                             })
      .def_property_readonly("object_code",
                             [](const CompiledModel &c) {
                               auto code = c.objectCode();
                               if (!code)
                                 raise(llvm::toString(code.takeError()));
                               return py::bytes(*code);
                             })
      .def_property_readonly("stages",
                             [](const CompiledModel &c) {
                               py::list l;
                               for (const PhaseTiming &t : c.timings())
                                 l.append(
                                     py::make_tuple(t.phase, t.seconds, t.opsBefore, t.opsAfter));
                               return l;
                             })
      .def_property_readonly("summary",
                             [](const CompiledModel &c) {
                               py::list l;
                               for (const SummaryRow &r : c.summary())
                                 l.append(py::make_tuple(r.op, r.name, r.operands, r.result));
                               return l;
                             })
      .def(
          "run",
          [](const CompiledModel &c, const std::vector<py::array> &inputs,
             const std::vector<py::array> &outputs) {
            if (inputs.size() != c.inputs().size() || outputs.size() != c.outputs().size())
              raise("run() takes " + std::to_string(c.inputs().size()) + " inputs and " +
                    std::to_string(c.outputs().size()) + " outputs");
            std::vector<TensorView> in, out;
            for (size_t i = 0; i < inputs.size(); ++i)
              in.push_back(viewOf(inputs[i], c.inputs()[i], "input"));
            for (size_t i = 0; i < outputs.size(); ++i) {
              if (!outputs[i].writeable())
                raise("output buffer '" + c.outputs()[i].name + "' is read-only");
              out.push_back(viewOf(outputs[i], c.outputs()[i], "output"));
            }
            llvm::Error err = llvm::Error::success();
            {
              py::gil_scoped_release release;
              err = c.run(in, out);
            }
            if (err)
              raise(llvm::toString(std::move(err)));
          },
          py::arg("inputs"), py::arg("outputs"),
          "Runs the model on C-contiguous arrays; outputs are written in place")
      .def(
          "common_call",
          [](const CompiledModel &c, const py::list &inputs, const py::list &outputs,
             const py::list &outputNames, py::object dictType) {
            return CommonCall(c, inputs, outputs, outputNames, std::move(dictType));
          },
          py::arg("inputs"), py::arg("outputs"), py::arg("output_names"), py::arg("dict_type"),
          py::keep_alive<0, 1>(),
          "evaluate()'s common call as one native step: call(params, data) with "
          "inputs (name, dtype, shape) and outputs (shape, dtype) as compiled; "
          "the outputs in a dict_type keyed by output_names, or None where the "
          "call is not a common one")
      .def(
          "output_shapes",
          [](const CompiledModel &c, const std::vector<std::vector<int64_t>> &shapes) {
            std::vector<llvm::ArrayRef<int64_t>> refs(shapes.begin(), shapes.end());
            auto result = c.outputShapes(refs);
            if (!result)
              raise(llvm::toString(result.takeError()));
            py::list l;
            for (const auto &shape : *result)
              l.append(py::tuple(py::cast(std::vector<int64_t>(shape.begin(), shape.end()))));
            return l;
          },
          py::arg("input_shapes"),
          "The output shapes for inputs of these shapes (the model's shape rules)");

  m.def(
      "compile",
      [](const std::string &source, const std::string &entry,
         const std::vector<std::string> &shapes, const std::vector<std::string> &discard,
         const std::string &sourceName, bool gradients, const std::vector<std::string> &wrt,
         const std::vector<std::string> &seeds, const std::string &optimizer, double momentum,
         double weightDecay, unsigned threads, bool dynamicShapes, bool gpuTilesOnHost,
         const std::string &target, const std::string &chip, const std::string &optimizationLevel,
         const std::vector<std::pair<std::string, bool>> &optimizations, int llvmLevel,
         bool profile, unsigned checkpointSegments, const std::string &precision,
         bool precisionTerminals, const std::string &targetCpu, const std::string &quantize,
         bool quantizeObserve, const std::vector<double> &activationScales,
         const std::vector<double> &activationRanges, bool allReduceGradients,
         unsigned tensorParallel, bool cache, bool lossScaling, bool interfaceOnly,
         const std::map<std::string, uint64_t> &externalSymbols,
         const std::vector<std::string> &sharedLibraries, unsigned compileThreads) {
        std::unique_ptr<CompiledModel> result;
        {
          // Compilation does not touch Python objects.
          py::gil_scoped_release release;
          CompileOptions options = makeOptions(entry, shapes, discard, sourceName, gradients, wrt,
                                               seeds, optimizer, momentum, weightDecay);
          options.threads = threads;
          options.dynamicShapes = dynamicShapes;
          options.gpuTilesOnHost = gpuTilesOnHost;
          options.target = target;
          options.gpuChip = chip;
          llvm::Error err = setOptimizationLevel(options, optimizationLevel);
          for (const auto &[name, enabled] : optimizations)
            if (!err)
              err = setOptimization(options, name, enabled);
          if (err) {
            std::string message = llvm::toString(std::move(err));
            py::gil_scoped_acquire acquire;
            throw py::value_error(message);
          }
          if (llvmLevel >= 0)
            options.optLevel = static_cast<unsigned>(llvmLevel);
          options.profile = profile;
          options.checkpointSegments = checkpointSegments;
          options.precision = precision;
          options.precisionTerminals = precisionTerminals;
          options.targetCpu = targetCpu;
          options.compileThreads = compileThreads;
          options.quantize = quantize;
          options.quantizeObserve = quantizeObserve;
          options.activationScales = activationScales;
          options.activationRanges = activationRanges;
          options.allReduceGradients = allReduceGradients;
          options.tensorParallel = tensorParallel;
          options.useCache = cache;
          options.lossScaling = lossScaling;
          options.interfaceOnly = interfaceOnly;
          options.externalSymbols = externalSymbols;
          options.sharedLibraries = sharedLibraries;
          auto model = CompiledModel::compile(source, options);
          if (!model) {
            std::string message = llvm::toString(model.takeError());
            py::gil_scoped_acquire acquire;
            raise(message);
          }
          result = std::move(*model);
        }
        return result;
      },
      py::arg("source"), py::arg("entry") = "", py::arg("shapes") = std::vector<std::string>{},
      py::arg("discard") = std::vector<std::string>{}, py::arg("source_name") = "<python>",
      py::arg("gradients") = false, py::arg("wrt") = std::vector<std::string>{},
      py::arg("seeds") = std::vector<std::string>{}, py::arg("optimizer") = "",
      py::arg("momentum") = 0.0, py::arg("weight_decay") = 0.0, py::arg("threads") = 0u,
      py::arg("dynamic_shapes") = false, py::arg("gpu_tiles_on_host") = false,
      py::arg("target") = "cpu", py::arg("chip") = "sm_90",
      py::arg("optimization_level") = "medium",
      py::arg("optimizations") = std::vector<std::pair<std::string, bool>>{},
      py::arg("llvm_level") = -1, py::arg("profile") = false, py::arg("checkpoint_segments") = 0u,
      py::arg("precision") = "", py::arg("precision_terminals") = false, py::arg("target_cpu") = "",
      py::arg("quantize") = "", py::arg("quantize_observe") = false,
      py::arg("activation_scales") = std::vector<double>{},
      py::arg("activation_ranges") = std::vector<double>{}, py::arg("all_reduce_gradients") = false,
      py::arg("tensor_parallel") = 1u, py::arg("cache") = true, py::arg("loss_scaling") = false,
      py::arg("interface_only") = false,
      py::arg("external_symbols") = std::map<std::string, uint64_t>{},
      py::arg("shared_libraries") = std::vector<std::string>{}, py::arg("compile_threads") = 0u);
  m.def(
      "batch_sharding",
      [](const std::string &source, const std::string &entry,
         const std::vector<std::string> &shapes, const std::vector<std::string> &discard,
         const std::vector<std::string> &batched, const std::string &sourceName,
         const std::string &doubledSource, const std::vector<std::string> &doubledShapes) {
        CompileOptions options;
        options.entry = entry;
        options.shapes = shapes;
        options.discard = discard;
        options.sourceName = sourceName;
        auto plan = analyzeDataParallel(source, options, batched, doubledSource, doubledShapes);
        if (!plan)
          raise(llvm::toString(plan.takeError()));
        py::list l;
        for (const OutputDistribution &o : plan->outputs) {
          const char *kind = "replicated";
          switch (o.sharding.kind) {
          case BatchSharding::Kind::Replicated:
            break;
          case BatchSharding::Kind::Sharded:
            kind = "sharded";
            break;
          case BatchSharding::Kind::PartialSum:
            kind = "partial_sum";
            break;
          case BatchSharding::Kind::PartialMean:
            kind = "partial_mean";
            break;
          }
          l.append(py::make_tuple(o.name, kind, o.sharding.axis));
        }
        return py::make_tuple(plan->batchedInputs, l);
      },
      py::arg("source"), py::arg("entry"), py::arg("shapes"), py::arg("discard"),
      py::arg("batched"), py::arg("source_name") = "<python>", py::arg("doubled_source") = "",
      py::arg("doubled_shapes") = std::vector<std::string>{},
      "How each output is spread over the ranks when the `batched` inputs (empty: every "
      "data input whose axis 0 is dynamic) are split along axis 0 (mithril-batch-sharding): "
      "(the split inputs, [(output, kind, axis)]). With `doubled_source` (the model for "
      "twice the batch of `source`, both static), the sizes that differ are the batch's.");
  m.def(
      "distributed_init",
      [] {
        auto info = initDistributed();
        if (!info)
          raise(llvm::toString(info.takeError()));
        return py::make_tuple(info->rank, info->size, info->library);
      },
      "Starts MPI once per process: (rank, size, the MPI library's version)");
  m.def(
      "setup_mesh",
      [](int data, int tensor) {
        if (llvm::Error err = setupMesh(data, tensor))
          raise(llvm::toString(std::move(err)));
        auto d = groupRankAndSize(Group::Data);
        auto t = groupRankAndSize(Group::Tensor);
        if (!d)
          raise(llvm::toString(d.takeError()));
        if (!t)
          raise(llvm::toString(t.takeError()));
        return py::make_tuple(d->first, t->first);
      },
      py::arg("data"), py::arg("tensor"),
      "Arranges the ranks as a data x tensor mesh: (this rank's index in its data group, in "
      "its tensor group)");
  m.def(
      "all_reduce_sum",
      [](py::array array, const std::string &group) {
        bool isDouble = array.dtype().is(py::dtype::of<double>());
        if (!(isDouble || array.dtype().is(py::dtype::of<float>())) ||
            !(array.flags() & py::array::c_style) || !array.writeable())
          throw py::type_error("all_reduce_sum takes a writable C-contiguous float32 or "
                               "float64 array");
        void *data = array.mutable_data();
        int64_t count = array.size();
        llvm::Error err = llvm::Error::success();
        {
          py::gil_scoped_release release;
          err = allReduceSum(data, count, isDouble, parseGroup(group));
        }
        if (err)
          raise(llvm::toString(std::move(err)));
      },
      py::arg("array"), py::arg("group") = "world",
      "Sums the array over the ranks of group ('world', 'data' or 'tensor'), in place "
      "(MPI_Allreduce)");
  m.def("all_reduce_seconds", &allReduceSeconds,
        "Seconds this process has spent in sums over the ranks (the compiled gradients' "
        "and all_reduce_sum's), waiting for the other ranks included; 0 before MPI started");
  m.def("all_reduce_calls", &allReduceCalls,
        "Sums this process has handed to MPI (a bucket of gradients counts once); 0 before "
        "MPI started");
  m.def(
      "all_gather_bytes",
      [](py::bytes local, const std::vector<int64_t> &counts, const std::string &group) {
        std::string send = local;
        int64_t total = 0;
        for (int64_t c : counts)
          total += c;
        std::string recv(static_cast<size_t>(total), '\0');
        llvm::Error err = llvm::Error::success();
        {
          py::gil_scoped_release release;
          err = allGatherBytes(send.data(), static_cast<int64_t>(send.size()), recv.data(), counts,
                               parseGroup(group));
        }
        if (err)
          raise(llvm::toString(std::move(err)));
        return py::bytes(recv);
      },
      py::arg("local"), py::arg("counts"), py::arg("group") = "world",
      "Every rank's bytes in rank order (MPI_Allgatherv); counts[r] is rank r's length");
  m.def("gather_outputs", &gatherOutputs, py::arg("parts"), py::arg("partial"), py::arg("weight"),
        py::arg("group") = "data",
        "A data-parallel step's outputs over the ranks of group, in one or two collectives: "
        "parts[i] is this rank's C-contiguous part; partial[i] False: the ranks' parts "
        "concatenated along axis 0; 'sum' or 'mean': added up in rank order, float32/float64 "
        "in float64 (a mean's part weighted by weight first), int32/int64 in int64");
  m.def(
      "all_gather_into",
      [](py::array local, py::array out, const std::string &group) {
        if (!(local.flags() & py::array::c_style) || !(out.flags() & py::array::c_style) ||
            !out.writeable())
          throw py::type_error("all_gather_into takes a C-contiguous array and a writable "
                               "C-contiguous one to gather into");
        int64_t bytes = local.nbytes();
        if (bytes == 0 || out.nbytes() % bytes != 0)
          throw py::value_error("all_gather_into: the output's " + std::to_string(out.nbytes()) +
                                " bytes are not a whole number of the local " +
                                std::to_string(bytes));
        // Every rank sends as many bytes; allGatherBytes checks there is one
        // count per rank of the group.
        std::vector<int64_t> counts(static_cast<size_t>(out.nbytes() / bytes), bytes);
        const void *send = local.data();
        void *recv = out.mutable_data();
        llvm::Error err = llvm::Error::success();
        {
          py::gil_scoped_release release;
          err = allGatherBytes(send, bytes, recv, counts, parseGroup(group));
        }
        if (err)
          raise(llvm::toString(std::move(err)));
      },
      py::arg("local"), py::arg("out"), py::arg("group") = "world",
      "Every rank's array, in rank order, into out (MPI_Allgather of equal parts, no copies)");
  m.def(
      "broadcast",
      [](py::array array, int root, const std::string &group) {
        if (!(array.flags() & py::array::c_style) || !array.writeable())
          throw py::type_error("broadcast takes a writable C-contiguous array");
        void *data = array.mutable_data();
        int64_t bytes = array.nbytes();
        llvm::Error err = llvm::Error::success();
        {
          py::gil_scoped_release release;
          err = broadcastBytes(data, bytes, root, parseGroup(group));
        }
        if (err)
          raise(llvm::toString(std::move(err)));
      },
      py::arg("array"), py::arg("root") = 0, py::arg("group") = "world",
      "Rank root's array on every rank of group, in place");
  m.def(
      "logical_inputs",
      [](const std::string &source, const std::string &entry,
         const std::vector<std::string> &shapes) {
        auto inputs = mithril::runtime::logicalInputs(
            source, makeOptions(entry, shapes, {}, "<model " + entry + ">"));
        if (!inputs)
          raise(llvm::toString(inputs.takeError()));
        py::list l;
        for (const TerminalInfo &t : *inputs)
          l.append(terminalInfo(t));
        return l;
      },
      py::arg("source"), py::arg("entry"), py::arg("shapes") = std::vector<std::string>{},
      "The entry model's inputs after shape inference, without compiling it (None for "
      "the sizes still unknown)");
  m.def(
      "run_passes",
      [](const std::string &source, const std::string &pipeline, const std::string &name) {
        auto text = mithril::runtime::runPasses(source, pipeline, name);
        if (!text)
          raise(llvm::toString(text.takeError()));
        return *text;
      },
      py::arg("source"), py::arg("pipeline"), py::arg("name") = "<python>",
      "Runs a textual pass pipeline (mithril-opt's --pass-pipeline) on mithril IR");
  m.def(
      "to_bfloat16_bits",
      [](py::array_t<float, py::array::c_style | py::array::forcecast> values) {
        py::array_t<uint16_t> bits(
            std::vector<py::ssize_t>(values.shape(), values.shape() + values.ndim()));
        const auto *in = reinterpret_cast<const uint32_t *>(values.data());
        uint16_t *out = bits.mutable_data();
        py::ssize_t n = values.size();
        {
          py::gil_scoped_release release;
          for (py::ssize_t i = 0; i < n; ++i)
            out[i] = mithril::bfloat16FromFloatBits(in[i]);
        }
        return bits;
      },
      py::arg("values"),
      "The bfloat16 bit patterns of float32 values, rounded to nearest even (as compiled "
      "code rounds)");
  m.def("buffer_bytes", &bufferBytes,
        "(live, peak): bytes of compiled code's buffers now and at most since reset_peak_bytes");
  m.def("reset_peak_bytes", &resetPeakBufferBytes);
  m.def(
      "profile_records",
      [] {
        py::list l;
        for (const ProfileRecord &r : profileRecords())
          l.append(py::make_tuple(r.model, r.kernel, r.calls, r.seconds));
        return l;
      },
      "(model, kernel, calls, seconds) of every profiled kernel so far");
  m.def(
      "cpu_target",
      [](const std::string &cpu) {
        std::optional<mithril::CpuTarget> target = mithril::cpuTarget(cpu);
        if (!target)
          raise("unknown target CPU '" + cpu + "'");
        py::dict d;
        d["cpu"] = cpu.empty() ? llvm::sys::getHostCPUName().str() : cpu;
        d["vector_bits"] = target->vectorBits;
        d["bf16_dot_product"] = target->bf16DotProduct;
        d["bf16_pair_products"] = target->bf16PairProducts();
        d["int8_dot_product"] = target->int8DotProduct;
        d["bf16_tiles"] = target->bf16Tiles;
        d["int8_tiles"] = target->int8Tiles;
        d["wide_float_tiles"] = target->wideFloatTiles;
        return d;
      },
      py::arg("cpu") = "",
      "What the CPU schedule picks its kernels from for `cpu` (LLVM's name; the host's when "
      "empty): vector_bits, bf16_dot_product (vdpbf16ps), int8_dot_product (vpdpbusd), "
      "bf16_tiles and int8_tiles (AMX tdpbf16ps and tdpbusd; for the host, only when Linux "
      "grants this process the tile state), wide_float_tiles (6 x 64 float32 register tiles "
      "for deep products of two or more 64-column panels)");
  m.def("host_cpu", &CompiledModel::hostCPU,
        "The host's CPU name and features, as saved models record them");
  m.def(
      "load",
      [](const py::bytes &object, const std::string &logicalIR, const std::string &cpu,
         const std::string &entry, unsigned threads, bool dynamicShapes,
         const std::string &sourceName, const std::map<std::string, uint64_t> &externalSymbols) {
        std::string code = object;
        std::unique_ptr<CompiledModel> result;
        {
          py::gil_scoped_release release;
          CompileOptions options = makeOptions(entry, {}, {}, sourceName);
          options.threads = threads;
          options.dynamicShapes = dynamicShapes;
          options.externalSymbols = externalSymbols;
          auto model = CompiledModel::load(code, logicalIR, cpu, options);
          if (!model) {
            std::string message = llvm::toString(model.takeError());
            py::gil_scoped_acquire acquire;
            raise(message);
          }
          result = std::move(*model);
        }
        return result;
      },
      py::arg("object"), py::arg("logical_ir"), py::arg("cpu"), py::arg("entry") = "",
      py::arg("threads") = 0u, py::arg("dynamic_shapes") = false,
      py::arg("source_name") = "<saved model>",
      py::arg("external_symbols") = std::map<std::string, uint64_t>{});
  m.attr("OPTIMIZATION_NAMES") = [] {
    py::list names;
    for (llvm::StringRef name : optimizationNames())
      names.append(name.str());
    return names;
  }();

  m.def(
      "emit",
      [](const std::string &source, const std::string &format, const std::string &stage,
         const std::string &entry, const std::vector<std::string> &shapes,
         const std::string &target, const std::string &chip, unsigned threads) {
        CompileOptions options = makeOptions(entry, shapes, {}, "<python>");
        options.threads = threads;
        options.target = target;
        options.gpuChip = chip;
        auto text = mithril::runtime::emit(source, options, format, stage);
        if (!text)
          raise(llvm::toString(text.takeError()));
        return py::bytes(*text);
      },
      py::arg("source"), py::arg("format") = "mlir", py::arg("stage") = "llvm",
      py::arg("entry") = "", py::arg("shapes") = std::vector<std::string>{},
      py::arg("target") = "cpu", py::arg("chip") = "sm_90", py::arg("threads") = 0u);
}
