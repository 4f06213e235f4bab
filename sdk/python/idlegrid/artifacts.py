"""Downloading content-addressed artifacts, verified: the bytes must hash to
the digest asked for and add up to the size the coordinator announced.
Nothing unverified is returned or left at its final path."""
import hashlib
import os
import tempfile

from .errors import IntegrityError


class DigestCheck:
    """Running sha256 and size of a download against what it must be."""

    def __init__(self, digest, size=None):
        self.digest = digest
        self.size = size
        self._hash = hashlib.sha256()
        self._seen = 0

    def update(self, data):
        self._hash.update(data)
        self._seen += len(data)

    def finish(self):
        """Raises IntegrityError naming the digest if the bytes were not it."""
        got = "sha256:" + self._hash.hexdigest()
        if self.size is not None and self._seen != self.size:
            raise IntegrityError(f"artifact {self.digest}: got {self._seen} bytes, expected {self.size}")
        if got != self.digest:
            raise IntegrityError(f"artifact {self.digest}: downloaded bytes hash to {got}")


def _checked_chunks(chunks, digest, size):
    check = DigestCheck(digest, size)
    for chunk in chunks:
        if chunk.size and check.size is None:
            check.size = chunk.size
        check.update(chunk.data)
        yield chunk.data
    check.finish()


def read_verified(chunks, digest, size=None):
    """The whole artifact from a DownloadArtifact stream, verified."""
    return b"".join(_checked_chunks(chunks, digest, size))


def save_verified(chunks, digest, path, size=None):
    """Writes the artifact to `path` via a temporary file beside it, renamed
    into place only once verified."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".idlegrid-", suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            for data in _checked_chunks(chunks, digest, size):
                f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
