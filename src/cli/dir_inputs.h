#pragma once
// Directory inputs on the requester's side (docs/manifest.md, Inputs):
// `idlegrid artifact push DIR` and a manifest's `{dir: DIR, path: P}` pack
// the directory as a deterministic tar (image/dir_archive.h) in a temporary
// file and upload it; `idlegrid validate` only computes its digest.
#include <functional>
#include <string>

#include "cli/client.h"
#include "common/status.h"
#include "manifest/manifest.h"

namespace idlegrid::cli {

// Packs `dir` and uploads it as an artifact (`make_public` as for files);
// the temporary tar is removed either way. WriteDirectoryTar's errors
// (a symlink or device in the tree, named) or the upload's.
Result<v1::ArtifactRef> PushDirectory(Client& client, const std::string& dir, bool make_public);

// The digest `dir` packs to, uploading nothing.
Result<std::string> DirectoryDigest(const std::string& dir);

// A resolver for LoadManifestFile that uploads each `dir:` input through
// the client `connect` returns (called once, at the first such input).
manifest::DirInputResolver UploadingDirResolver(std::function<Result<Client*>()> connect);

}  // namespace idlegrid::cli
