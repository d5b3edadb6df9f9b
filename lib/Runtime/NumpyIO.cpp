//===- NumpyIO.cpp - .npy and .npz files ----------------------------------===//
//
// Part of the Mithril-MLIR project, under the Apache License v2.0 with LLVM
// Exceptions. See LICENSE for license information.
//
// Readers treat every byte as untrusted: lengths are checked before use and
// every failure names the file and what was wrong.
//
//===----------------------------------------------------------------------===//

#include "mithril/Runtime/NumpyIO.h"

#include "llvm/Support/CRC.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#if MITHRIL_HAVE_ZLIB
#include <zlib.h>
#endif

using namespace llvm;
using namespace mithril::runtime;

static Error error(StringRef source, const Twine &message) {
  return createStringError(inconvertibleErrorCode(), source + ": " + message);
}

static uint16_t readLE16(const uint8_t *p) { return p[0] | (p[1] << 8); }
static uint32_t readLE32(const uint8_t *p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

/// Finds `'key':` in the header dictionary and returns the text after it.
static std::optional<StringRef> headerValue(StringRef header, StringRef key) {
  for (char quote : {'\'', '"'}) {
    std::string needle = quote + key.str() + quote;
    size_t pos = header.find(needle);
    if (pos == StringRef::npos)
      continue;
    StringRef rest = header.drop_front(pos + needle.size()).ltrim();
    if (!rest.consume_front(":"))
      return std::nullopt;
    return rest.ltrim();
  }
  return std::nullopt;
}

static std::optional<DType> parseDescr(StringRef descr, bool &swapped) {
  swapped = false;
  if (descr.size() < 2)
    return std::nullopt;
  char order = descr[0];
  StringRef kind = descr.drop_front();
  if (order == '>' && kind != "b1" && kind != "u1")
    swapped = true;
  else if (order != '<' && order != '|' && order != '=')
    return std::nullopt;
  if (kind == "f4")
    return DType::F32;
  if (kind == "f8")
    return DType::F64;
  if (kind == "i1")
    return DType::I8;
  if (kind == "i2")
    return DType::I16;
  if (kind == "i4")
    return DType::I32;
  if (kind == "i8")
    return DType::I64;
  if (kind == "b1")
    return DType::Bool;
  if (kind == "f2")
    return DType::F16;
  // bfloat16, which numpy lacks, as raw 2-byte data (ml_dtypes' bfloat16
  // arrays view it back).
  if (kind == "V2")
    return DType::BF16;
  return std::nullopt;
}

Expected<Array> mithril::runtime::parseNpy(ArrayRef<uint8_t> bytes, StringRef source) {
  static const uint8_t magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (bytes.size() < 10 || std::memcmp(bytes.data(), magic, 6) != 0)
    return error(source, "not a .npy file (bad magic bytes)");
  uint8_t major = bytes[6];
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = readLE16(bytes.data() + 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return error(source, "truncated .npy header");
    headerLen = readLE32(bytes.data() + 8);
    headerStart = 12;
  } else {
    return error(source, "unsupported .npy format version " + Twine(int(major)));
  }
  if (headerLen > bytes.size() - headerStart)
    return error(source, "truncated .npy header");
  StringRef header(reinterpret_cast<const char *>(bytes.data() + headerStart), headerLen);

  std::optional<StringRef> descrText = headerValue(header, "descr");
  std::optional<StringRef> fortranText = headerValue(header, "fortran_order");
  std::optional<StringRef> shapeText = headerValue(header, "shape");
  if (!descrText || !fortranText || !shapeText)
    return error(source, "malformed .npy header: " + header.trim());
  // descr: a quoted string.
  StringRef d = *descrText;
  if (d.empty() || (d[0] != '\'' && d[0] != '"'))
    return error(source, "malformed dtype in .npy header");
  char q = d[0];
  size_t end = d.find(q, 1);
  if (end == StringRef::npos)
    return error(source, "malformed dtype in .npy header");
  StringRef descr = d.slice(1, end);
  bool swapped;
  std::optional<DType> dtype = parseDescr(descr, swapped);
  if (!dtype)
    return error(source,
                 "unsupported dtype '" + descr +
                     "' (supported: float32, float64, float16, bfloat16 as raw 2-byte 'V2' data, "
                     "int8, int16, int32, int64, bool)");
  if (swapped)
    return error(source, "big-endian arrays are not supported");
  if (fortranText->starts_with("True"))
    return error(source, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
  // shape: a tuple of integers.
  StringRef s = *shapeText;
  if (!s.consume_front("("))
    return error(source, "malformed shape in .npy header");
  size_t close = s.find(')');
  if (close == StringRef::npos)
    return error(source, "malformed shape in .npy header");
  SmallVector<int64_t> shape;
  SmallVector<StringRef> parts;
  s.take_front(close).split(parts, ',');
  for (StringRef part : parts) {
    part = part.trim();
    if (part.empty())
      continue;
    int64_t v;
    if (part.getAsInteger(10, v) || v < 0)
      return error(source, "malformed dimension '" + part + "' in .npy header");
    shape.push_back(v);
  }
  std::optional<int64_t> n = numElements(shape);
  if (!n)
    return error(source, "shape " + formatShape(shape) + " is too large");
  size_t dataStart = headerStart + headerLen;
  size_t available = bytes.size() - dataStart;
  size_t elementSize = dtypeSize(*dtype);
  if (static_cast<uint64_t>(*n) > available / elementSize)
    return error(source, "truncated data: shape " + formatShape(shape) + " of " +
                             dtypeName(*dtype) + " needs " + Twine(*n * elementSize) +
                             " bytes, the file has " + Twine(available));
  Expected<Array> array = Array::allocate(*dtype, shape);
  if (!array)
    return error(source, llvm::toString(array.takeError()));
  std::memcpy(array->data(), bytes.data() + dataStart, array->byteSize());
  return array;
}

std::vector<uint8_t> mithril::runtime::serializeNpy(const Array &array) {
  std::string descr;
  switch (array.dtype()) {
  case DType::F32: descr = "<f4"; break;
  case DType::F64: descr = "<f8"; break;
  case DType::I32: descr = "<i4"; break;
  case DType::I64: descr = "<i8"; break;
  case DType::I8:
    descr = "|i1";
    break;
  case DType::I16:
    descr = "<i2";
    break;
  case DType::Bool: descr = "|b1"; break;
  case DType::F16:
    descr = "<f2";
    break;
  case DType::BF16:
    descr = "|V2";
    break;
  }
  std::string shape = "(";
  for (int64_t d : array.shape())
    shape += std::to_string(d) + ", ";
  if (array.shape().size() > 1)
    shape.resize(shape.size() - 2);
  else if (array.shape().size() == 1)
    shape.resize(shape.size() - 1);
  shape += ")";
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts on a 64-byte boundary, ending with '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.push_back(header.size() & 0xff);
  out.push_back(header.size() >> 8);
  out.insert(out.end(), header.begin(), header.end());
  const uint8_t *data = static_cast<const uint8_t *>(array.data());
  out.insert(out.end(), data, data + array.byteSize());
  return out;
}

static Expected<std::unique_ptr<MemoryBuffer>> readFile(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer)
    return error(path, "cannot read: " + buffer.getError().message());
  return std::move(*buffer);
}

Expected<Array> mithril::runtime::readNpy(StringRef path) {
  auto buffer = readFile(path);
  if (!buffer)
    return buffer.takeError();
  ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()),
                          (*buffer)->getBufferSize());
  return parseNpy(bytes, path);
}

static Expected<std::vector<uint8_t>> inflateMember(ArrayRef<uint8_t> compressed,
                                                    size_t expected, StringRef source) {
#if MITHRIL_HAVE_ZLIB
  // Deflate expands at most 1032:1; a header that claims more is corrupt (or
  // a zip bomb), and trusting it would allocate whatever it asks for.
  constexpr uint64_t kMaxDeflateRatio = 1032;
  if (expected > kMaxDeflateRatio * compressed.size() + 64)
    return error(source, "corrupt zip header: " + Twine(compressed.size()) +
                             " compressed bytes cannot inflate to the " + Twine(expected) +
                             " it declares");
  std::vector<uint8_t> out(expected);
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK)
    return error(source, "cannot initialize zlib");
  stream.next_in = const_cast<Bytef *>(compressed.data());
  stream.avail_in = compressed.size();
  stream.next_out = out.data();
  stream.avail_out = out.size();
  int rc = inflate(&stream, Z_FINISH);
  inflateEnd(&stream);
  if (rc != Z_STREAM_END || stream.total_out != expected)
    return error(source, "corrupt compressed data");
  return out;
#else
  (void)compressed;
  (void)expected;
  return error(source, "compressed .npz members need zlib, which this build lacks; "
                       "save with np.savez instead of np.savez_compressed");
#endif
}

Expected<NamedArrays> mithril::runtime::parseNpz(ArrayRef<uint8_t> bytes, StringRef source) {
  // Walk the local file headers; numpy writes no data descriptors unless the
  // archive was streamed, in which case the central directory gives sizes.
  NamedArrays arrays;
  size_t pos = 0;
  while (pos + 4 <= bytes.size()) {
    uint32_t sig = readLE32(bytes.data() + pos);
    if (sig == 0x02014b50 || sig == 0x06054b50)
      break; // central directory: done
    if (sig != 0x04034b50)
      return error(source, "not a .npz (zip) archive, or corrupt at byte " + Twine(pos));
    if (pos + 30 > bytes.size())
      return error(source, "truncated zip header");
    const uint8_t *h = bytes.data() + pos;
    uint16_t flags = readLE16(h + 6), method = readLE16(h + 8);
    uint32_t crc = readLE32(h + 14);
    uint64_t compSize = readLE32(h + 18), rawSize = readLE32(h + 22);
    uint16_t nameLen = readLE16(h + 26), extraLen = readLE16(h + 28);
    if (pos + 30 + nameLen + extraLen > bytes.size())
      return error(source, "truncated zip header");
    std::string name(reinterpret_cast<const char *>(h + 30), nameLen);
    // ZIP64: sizes live in the extra field.
    if (compSize == 0xffffffff || rawSize == 0xffffffff) {
      const uint8_t *e = h + 30 + nameLen, *eEnd = e + extraLen;
      while (e + 4 <= eEnd) {
        uint16_t id = readLE16(e), len = readLE16(e + 2);
        if (id == 1 && len >= 16 && e + 4 + 16 <= eEnd) {
          rawSize = readLE32(e + 4) | (uint64_t(readLE32(e + 8)) << 32);
          compSize = readLE32(e + 12) | (uint64_t(readLE32(e + 16)) << 32);
        }
        e += 4 + len;
      }
    }
    if (flags & 0x8)
      return error(source, "member '" + name + "' uses a streamed zip layout, which is not supported");
    size_t dataStart = pos + 30 + nameLen + extraLen;
    if (compSize > bytes.size() - dataStart)
      return error(source, "member '" + name + "' is truncated");
    ArrayRef<uint8_t> data = bytes.slice(dataStart, compSize);
    std::string member = (source + ":" + name).str();
    std::vector<uint8_t> inflated;
    if (method == 8) {
      auto out = inflateMember(data, rawSize, member);
      if (!out)
        return out.takeError();
      inflated = std::move(*out);
      data = inflated;
    } else if (method != 0) {
      return error(member, "unsupported zip compression method " + Twine(method));
    } else if (compSize != rawSize) {
      return error(member, "inconsistent sizes in the zip header");
    }
    if (llvm::crc32(data) != crc)
      return error(member, "CRC mismatch: the archive is corrupt");
    auto array = parseNpy(data, member);
    if (!array)
      return array.takeError();
    StringRef key = name;
    key.consume_back(".npy");
    for (auto &entry : arrays)
      if (entry.first == key)
        return error(source, "duplicate array '" + key + "'");
    arrays.emplace_back(key.str(), std::move(*array));
    pos = dataStart + compSize;
  }
  if (arrays.empty() && bytes.size() < 22)
    return error(source, "not a .npz (zip) archive");
  return arrays;
}

Expected<NamedArrays> mithril::runtime::readNpz(StringRef path) {
  auto buffer = readFile(path);
  if (!buffer)
    return buffer.takeError();
  ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()),
                          (*buffer)->getBufferSize());
  return parseNpz(bytes, path);
}

Error mithril::runtime::writeFileAtomically(StringRef path, ArrayRef<uint8_t> bytes) {
  SmallString<256> dir(path);
  sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  SmallString<256> model(dir);
  sys::path::append(model, sys::path::filename(path) + ".tmp-%%%%%%");
  int fd;
  SmallString<256> tmp;
  if (std::error_code ec = sys::fs::createUniqueFile(model, fd, tmp))
    return error(path, "cannot create a temporary file: " + ec.message());
  {
    raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    os.flush();
    if (os.has_error()) {
      std::string msg = os.error().message();
      os.clear_error();
      sys::fs::remove(tmp);
      return error(path, "write failed: " + msg);
    }
  }
  if (std::error_code ec = sys::fs::rename(tmp, path)) {
    sys::fs::remove(tmp);
    return error(path, "cannot rename the temporary file: " + ec.message());
  }
  return Error::success();
}

Error mithril::runtime::writeNpy(StringRef path, const Array &array) {
  return writeFileAtomically(path, serializeNpy(array));
}

static void putLE16(std::vector<uint8_t> &out, uint16_t v) {
  out.push_back(v & 0xff);
  out.push_back(v >> 8);
}
static void putLE32(std::vector<uint8_t> &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back((v >> (8 * i)) & 0xff);
}

Error mithril::runtime::writeNpz(StringRef path, const NamedArrays &arrays) {
  // A stored (uncompressed) zip, as numpy.savez writes.
  std::vector<uint8_t> out, central;
  uint16_t count = 0;
  for (const auto &[name, array] : arrays) {
    std::vector<uint8_t> data = serializeNpy(array);
    if (data.size() >= 0xffffffffu)
      return error(path, "array '" + name + "' is too large for a .npz member");
    std::string file = name + ".npy";
    uint32_t crc = llvm::crc32(data);
    uint32_t offset = out.size();
    auto header = [&](std::vector<uint8_t> &o, bool isCentral) {
      putLE32(o, isCentral ? 0x02014b50 : 0x04034b50);
      if (isCentral)
        putLE16(o, 20); // version made by
      putLE16(o, 20);   // version needed
      putLE16(o, 0);    // flags
      putLE16(o, 0);    // stored
      putLE16(o, 0);    // time
      putLE16(o, 0x21); // date (1980-01-01)
      putLE32(o, crc);
      putLE32(o, data.size());
      putLE32(o, data.size());
      putLE16(o, file.size());
      putLE16(o, 0); // extra
      if (isCentral) {
        putLE16(o, 0); // comment
        putLE16(o, 0); // disk
        putLE16(o, 0); // internal attrs
        putLE32(o, 0); // external attrs
        putLE32(o, offset);
      }
      o.insert(o.end(), file.begin(), file.end());
    };
    header(out, false);
    out.insert(out.end(), data.begin(), data.end());
    header(central, true);
    ++count;
  }
  uint32_t centralOffset = out.size();
  out.insert(out.end(), central.begin(), central.end());
  putLE32(out, 0x06054b50);
  putLE16(out, 0);
  putLE16(out, 0);
  putLE16(out, count);
  putLE16(out, count);
  putLE32(out, central.size());
  putLE32(out, centralOffset);
  putLE16(out, 0);
  return writeFileAtomically(path, out);
}
