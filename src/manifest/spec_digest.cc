#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "common/digest.h"
#include "manifest/manifest.h"

namespace idlegrid::manifest {

std::string SpecDigest(const v1::JobSpec& spec) {
  // Plain SerializeToString writes map entries in the map's iteration order,
  // which protobuf leaves unspecified: one env map could hash two ways.
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    spec.SerializeToCodedStream(&coded);
  }
  return Sha256Digest(bytes);
}

}  // namespace idlegrid::manifest
