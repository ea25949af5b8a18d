// SafetensorsFile: a validated safetensors file kept memory-mapped for its whole lifetime.
#include <string>
#include <unordered_map>
#include <utility>

#include "io/safetensors.h"
#include "util/mapped_file.h"

namespace dsv4 {

// Lives on the heap so that the addresses TensorView::file and `by_name` hold (the path string,
// the tensor names) stay fixed when the SafetensorsFile handle is moved.
struct SafetensorsFile::State {
  MappedFile map;
  std::string path;
  SafetensorsHeader header;
  std::unordered_map<std::string_view, std::size_t> by_name;  // views header.tensors[i].name
  std::uint64_t data_bytes = 0;
};

SafetensorsFile::SafetensorsFile(const std::string& path) : s_(std::make_unique<State>()) {
  s_->path = path;
  s_->map = MappedFile(path);
  s_->header = parse_safetensors(s_->map.bytes(), s_->path);
  s_->data_bytes = s_->map.size() - s_->header.data_offset;
  auto& tensors = s_->header.tensors;
  s_->by_name.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    tensors[i].file = &s_->path;
    s_->by_name.emplace(tensors[i].name, i);  // names are unique: parse_safetensors checked
  }
}

SafetensorsFile::~SafetensorsFile() = default;
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;

const std::string& SafetensorsFile::path() const { return s_->path; }
const std::vector<TensorView>& SafetensorsFile::tensors() const { return s_->header.tensors; }
const std::map<std::string, std::string>& SafetensorsFile::metadata() const {
  return s_->header.metadata;
}
std::size_t SafetensorsFile::data_offset() const { return s_->header.data_offset; }
std::uint64_t SafetensorsFile::data_bytes() const { return s_->data_bytes; }
std::span<const std::uint8_t> SafetensorsFile::file_bytes() const { return s_->map.bytes(); }

const TensorView* SafetensorsFile::find(std::string_view name) const {
  auto it = s_->by_name.find(name);
  return it == s_->by_name.end() ? nullptr : &s_->header.tensors[it->second];
}

}  // namespace dsv4
