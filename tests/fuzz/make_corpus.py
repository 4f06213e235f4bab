#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/).

The seeds are committed; this script only documents where each came from and
rebuilds them (the binary ones: tars, gzip, an OCI archive, pilot frames, and
a receipt signed with fixed test keys). Text seeds are taken from the tests
and examples/; names starting with "bad_" are malformed on purpose.

Usage: /usr/bin/python3 tests/fuzz/make_corpus.py [BUILD_DIR]   (default: build)
The receipt needs python3-protobuf, python3-cryptography and the Python
stubs the build generates (BUILD_DIR/gen/python); the rest needs nothing.
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import struct
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))

D_A = "sha256:" + "a" * 64
D_B = "sha256:" + "b" * 64
D_C = "sha256:" + "c" * 64


def write(target, name, content):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(content.encode() if isinstance(content, str) else content)


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


# --- tar ---------------------------------------------------------------------


def make_tar(members, fmt=tarfile.USTAR_FORMAT, pax_headers=None):
    """A tar of (TarInfo fields, content) pairs, cut after its two zero blocks."""
    buf = io.BytesIO()
    tf = tarfile.open(fileobj=buf, mode="w", format=fmt, pax_headers=pax_headers or {})
    for fields, content in members:
        info = tarfile.TarInfo(fields["name"])
        info.mtime = 1700000000
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        for k, v in fields.items():
            setattr(info, k, v)
        if content is not None:
            info.size = len(content)
            tf.addfile(info, io.BytesIO(content))
        else:
            tf.addfile(info)
    end = tf.offset
    tf.close()
    return buf.getvalue()[: end + 1024]


def layer_members():
    return [
        ({"name": "app", "type": tarfile.DIRTYPE, "mode": 0o755}, None),
        ({"name": "app/run.sh", "mode": 0o755}, b"#!/bin/sh\necho hello\n"),
        ({"name": "app/latest", "type": tarfile.SYMTYPE, "linkname": "run.sh", "mode": 0o777}, None),
        ({"name": "app/run2.sh", "type": tarfile.LNKTYPE, "linkname": "app/run.sh", "mode": 0o755}, None),
        ({"name": "app/.wh.old", "mode": 0o644}, b""),
        ({"name": "dev/null", "type": tarfile.CHRTYPE, "devmajor": 1, "devminor": 3, "mode": 0o666}, None),
        ({"name": "./etc/setuid", "mode": 0o4755}, b"x"),
    ]


def tars():
    layer = make_tar(layer_members())
    write("tar", "layer.tar", layer)
    long_dir = "deep/" + "d" * 60 + "/" + "e" * 60
    write(
        "tar",
        "pax_long_names.tar",
        make_tar(
            [
                ({"name": long_dir + "/file.txt", "mode": 0o644}, b"pax path\n"),
                ({"name": "link", "type": tarfile.SYMTYPE, "linkname": long_dir + "/file.txt"}, None),
            ],
            fmt=tarfile.PAX_FORMAT,
            pax_headers={"comment": "a global header"},
        ),
    )
    write(
        "tar",
        "gnu_long_names.tar",
        make_tar(
            [
                ({"name": long_dir + "/gnu.txt", "mode": 0o644}, b"gnu path\n"),
                ({"name": "hard", "type": tarfile.LNKTYPE, "linkname": long_dir + "/gnu.txt"}, None),
            ],
            fmt=tarfile.GNU_FORMAT,
        ),
    )
    write("tar", "layer.tar.gz", gzip.compress(layer, mtime=0))
    write("tar", "bad_truncated.tar", layer[:700])
    bad_sum = bytearray(layer)
    bad_sum[10] ^= 0x20  # a name byte: the checksum no longer matches
    write("tar", "bad_checksum.tar", bytes(bad_sum))
    write(
        "tar",
        "bad_escaping_paths.tar",
        make_tar([({"name": "../escape", "mode": 0o644}, b"x"), ({"name": "/etc/passwd", "mode": 0o644}, b"y")]),
    )
    write("tar", "bad_truncated.tar.gz", gzip.compress(layer, mtime=0)[:60])


# --- OCI archives ------------------------------------------------------------


def oci_archive(
    config=None, layers=None, tamper_config=False, index_entries=None, skip=(), manifest_media=None, tamper=None
):
    layer_tar = make_tar(layer_members()[:3])
    layer_gz = gzip.compress(make_tar([({"name": "data.txt", "mode": 0o644}, b"42\n")]), mtime=0)
    config = config or json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Entrypoint": ["/app/run.sh"], "Cmd": ["--fast"], "Env": ["PATH=/bin"], "WorkingDir": "/app"},
            "rootfs": {"type": "layers", "diff_ids": [sha256(layer_tar)]},
        },
        separators=(",", ":"),
    ).encode()
    blobs = {sha256(config): config, sha256(layer_tar): layer_tar, sha256(layer_gz): layer_gz}
    layers = layers or [
        ("application/vnd.oci.image.layer.v1.tar", layer_tar),
        ("application/vnd.oci.image.layer.v1.tar+gzip", layer_gz),
        ("application/vnd.oci.image.layer.v1.tar", layer_tar),  # images may repeat a layer
    ]
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": sha256(config),
                "size": len(config),
            },
            "layers": [{"mediaType": m, "digest": sha256(b), "size": len(b)} for m, b in layers],
        },
        separators=(",", ":"),
    ).encode()
    blobs[sha256(manifest)] = manifest
    entry = {
        "mediaType": manifest_media or "application/vnd.oci.image.manifest.v1+json",
        "digest": sha256(manifest),
        "size": len(manifest),
        "annotations": {"org.opencontainers.image.ref.name": "sim:latest"},
    }
    index = json.dumps({"schemaVersion": 2, "manifests": index_entries(entry) if index_entries else [entry]}).encode()
    if tamper_config:
        blobs[sha256(config)] = config.replace(b"amd64", b"arm64")
    files = [("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'), ("index.json", index)]
    files += [("blobs/sha256/" + d[7:], b) for d, b in blobs.items()]
    members = [({"name": "blobs", "type": tarfile.DIRTYPE, "mode": 0o755}, None)]
    members += [({"name": "blobs/sha256", "type": tarfile.DIRTYPE, "mode": 0o755}, None)]
    members += [({"name": n, "mode": 0o644}, b) for n, b in files if n not in skip]
    return make_tar(members)


def oci():
    write("oci_archive", "image.tar", oci_archive())
    write("oci_archive", "two_tags.tar", oci_archive(index_entries=lambda e: [e, dict(e, annotations={})]))
    other = {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": D_B, "size": 10}
    write("oci_archive", "bad_two_manifests.tar", oci_archive(index_entries=lambda e: [e, other]))
    write("oci_archive", "bad_config_digest.tar", oci_archive(tamper_config=True))
    write("oci_archive", "bad_no_layout.tar", oci_archive(skip=("oci-layout",)))
    write(
        "oci_archive", "bad_nested_index.tar", oci_archive(manifest_media="application/vnd.oci.image.index.v1+json")
    )
    write("oci_archive", "bad_truncated.tar", oci_archive()[:1500])


# --- registry manifests ------------------------------------------------------


def registry():
    config = "sha256:" + "1" * 64
    layer = "sha256:" + "2" * 64

    def oci_manifest(media):
        return (
            '{"schemaVersion":2,' + media + '"config":{"mediaType":"application/vnd.oci.image.config.v1+json",'
            '"digest":"' + config + '","size":10},"layers":[{"mediaType":'
            '"application/vnd.oci.image.layer.v1.tar","digest":"' + layer + '","size":20}]}'
        )

    write("registry_manifest", "oci_manifest.json", oci_manifest('"mediaType":"application/vnd.oci.image.manifest.v1+json",'))
    write("registry_manifest", "oci_manifest_bare.json", oci_manifest(""))
    write(
        "registry_manifest",
        "oci_index.json",
        '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":'
        '"application/vnd.oci.image.manifest.v1+json","digest":"' + D_A + '","size":7,'
        '"platform":{"architecture":"amd64","os":"linux"}}]}',
    )
    write(
        "registry_manifest",
        "docker_v2.json",
        oci_manifest('"mediaType":"application/vnd.docker.distribution.manifest.v2+json",'),
    )
    write("registry_manifest", "docker_v1.json", '{"schemaVersion":1,"name":"a","fsLayers":[]}')
    write(
        "registry_manifest",
        "image_config.json",
        '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/sim"],"Cmd":["1000"],'
        '"Env":["PATH=/usr/bin"],"WorkingDir":"/work","User":"65534:65534"}}',
    )
    write("registry_manifest", "bad_not_json.txt", "<html>")
    write(
        "registry_manifest",
        "bad_wrong_types.json",
        '{"schemaVersion":2,"config":{"digest":"sha256:XYZ","size":1.5},"layers":{"digest":7},'
        '"config_":{"Entrypoint":"not a list"}}',
    )


# --- manifests, items, API bodies, task selections ---------------------------

FULL = (
    "apiVersion: idlegrid/v1\nname: sweep\nimage: sim@" + D_A + "\n"
    'command: ["/sim", "--mode"]\nargs: ["--steps", "1000"]\nenv: {SEED: "42", DEBUG: true, RATE: 0.5}\n'
    "resources:\n  gpus: 2\n  gpuMemory: 20Gi\n  cpu: 0.5\n  memory: 1Gi\n  disk: 20G\n  maxFileSize: 2G\n"
    "  shm: 512Mi\n  tmp: 128Mi\n  pids: 64\n  strictCpu: true\n"
    "inputs:\n  - artifact: " + D_B + "\n    path: /data/input.bin\n  - {artifact: " + D_C + ", path: /data/weights}\n"
    "output: /results\nrunTimeout: 10m\nqueueTimeout: 1h30m\nretries: 2\nidempotent: true\narray: {count: 20}\n"
    "runtime: runsc\n"
)

WORKFLOW = (
    "apiVersion: idlegrid/v1\nkind: Workflow\nname: diamond\nonFailure: continue\nsteps:\n"
    "  - name: a\n    image: sim@" + D_A + "\n    args: [write, a]\n"
    "  - name: b\n    dependsOn: [a]\n    image: sim@" + D_A + "\n"
    '    array: {items: [{x: 1}, {x: 2}]}\n    args: ["{{.x}}"]\n'
    "  - name: c\n    dependsOn: [a]\n    image: sim@" + D_A + "\n"
    "  - name: d\n    image: sim@" + D_A + "\n    inputs:\n"
    "      - {artifact: sha256:" + "1" * 64 + ", path: /data}\n"
    "      - {fromStep: b, output: hello.txt, path: /in/b}\n"
    "      - {fromStep: c, output: hello.txt, path: /in/c}\n"
)


def manifests():
    write("manifest", "ml_sweep.yaml", read("examples/ml-sweep/job.yaml"))
    write("manifest", "sweep.yaml", read("examples/sweep/job.yaml.in").replace("IMAGE", D_A))
    write("manifest", "cuda.yaml", read("examples/cuda/job.yaml.in").replace("IMAGE", D_A).replace("LAUNCHES", "100"))
    write("manifest", "full.yaml", FULL)
    write("manifest", "workflow.yaml", WORKFLOW)
    write(
        "manifest",
        "items_file_and_dir.yaml",
        "apiVersion: idlegrid/v1\nname: shards\nimage: sim@" + D_A + "\n"
        'args: ["{{.seed}}", "{{.lr}}"]\narray: {items: items.jsonl}\n'
        "inputs: [{dir: ./local, path: /data}]\n",
    )
    job = {
        "apiVersion": "idlegrid/v1",
        "name": "json-job",
        "image": "registry.example.org:5000/team/sim@" + D_A,
        "args": ["--seed", "{{.seed}}"],
        "resources": {"cpu": "500m", "memory": "256Mi"},
        "array": {"items": [{"seed": 1}, {"seed": 2}]},
        "verification": {"mode": "replicate", "replicas": 2},
    }
    write("manifest", "job.json", json.dumps(job, indent=1) + "\n")
    write("manifest", "bad_truncated.yaml", read("examples/ml-sweep/job.yaml")[:900])
    write(
        "manifest",
        "bad_wrong_types.yaml",
        "apiVersion: idlegrid/v1\nname: [x]\nimage: sim@" + D_A + "\nresources: [1, 2]\nretries: many\n"
        "env: [a]\nargs: {a: b}\n---\nsecond: document\n",
    )


def items():
    write("items", "seeds.jsonl", '{"seed": 7}\n\n{"seed": "eight"}\n')
    write("items", "crlf.jsonl", '{"seed": 1, "name": "a b"}\r\n{"seed": 2, "name": "c"}')
    write("items", "sweep.jsonl", "".join('{"lr": %s, "hidden": %d, "seed": 1}\n' % (lr, h) for lr in ("0.01", "0.1") for h in (16, 64)))
    write("items", "placeholders.txt", "--lr={{.lr}} --out /out/{{ .seed }}/{{.hidden}}")
    write("items", "bad_nested.jsonl", '{"a": 1}\n{"a": {"b": 2}}\n')
    write("items", "bad_not_objects.jsonl", '{"a": 1}\n[1, 2]\n42\n')
    write("items", "bad_unclosed.jsonl", '{"a": 1\n{{.x')


def api_bodies():
    spec = {
        "apiVersion": "idlegrid/v1",
        "name": "sweep",
        "image": "sim@" + D_A,
        "command": ["/sim"],
        "args": ["{{.seed}}", "/out"],
        "env": {"SEED": "{{.seed}}"},
        "resources": {"cpu": 0.5, "memoryBytes": "268435456", "pids": 64},
        "inputs": [{"artifact": D_B, "path": "/data/in.bin"}, {"artifact": D_C, "path": "/data/{{.seed}}", "unpack": True}],
        "outputPath": "/out",
        "runTimeoutSeconds": 600,
        "retries": 1,
        "arrayCount": 2,
        "items": [{"values": {"seed": "1"}}, {"values": {"seed": "2"}}],
        "verification": {"mode": "replicate", "replicas": 2},
    }
    write("api_json", "0_submit_job.json", "0" + json.dumps({"spec": spec}))
    write("api_json", "0_submit_minimal.json", "0" + json.dumps({"spec": {"name": "one", "image": "sim@" + D_A}}))
    step = lambda name, **kw: dict({"name": name, "job": {"image": "sim@" + D_A}}, **kw)
    workflow = {
        "apiVersion": "idlegrid/v1",
        "name": "diamond",
        "onFailure": "continue",
        "steps": [
            step("a"),
            step("b", dependsOn=["a"]),
            step("c", dependsOn=["a"]),
            step("d", fromSteps=[{"step": "b", "output": "x.txt", "path": "/in/b"}, {"step": "c", "output": "x.txt", "path": "/in/c"}]),
        ],
    }
    write("api_json", "1_submit_workflow.json", "1" + json.dumps({"spec": workflow}))
    write("api_json", "2_register_image.json", "2" + json.dumps({"manifestDigest": D_A}))
    write("api_json", "3_cancel.json", "3" + json.dumps({"taskIndices": [1, 3], "states": ["QUEUED", "RUNNING"]}))
    write("api_json", "4_retry.json", "4" + json.dumps({"failed": True, "taskIndices": [0]}))
    write("api_json", "5_drain.json", "5" + json.dumps({"deadlineSeconds": 600, "undo": False}))
    write("api_json", "0_bad_wrong_types.json", '0{"spec": {"name": 7, "resources": {"cpu": "lots"}, "args": "x"}}')
    write("api_json", "1_bad_truncated.json", "1" + json.dumps({"spec": workflow})[:120])


def task_ranges():
    for name, text in [
        ("list_and_ranges", "3,7-9"),
        ("spaces", " 1 , 2-4 ,10"),
        ("states", "queued,running,LOST"),
        ("wide_range", "0-999999"),
        ("bad_reversed", "9-3"),
        ("bad_too_large", "4294967296"),
        ("bad_empty_part", "1,,2"),
    ]:
        write("task_ranges", name + ".txt", text)


# --- pilot frames ------------------------------------------------------------


def pilot():
    def frame(*fields, chunk=0):
        payload = b"".join(f + b"\0" for f in fields)
        return bytes([chunk]) + struct.pack("<I", len(payload)) + payload

    write("pilot", "exit.bin", frame(b"exit", b"0", chunk=15))
    write("pilot", "exit_cpu.bin", frame(b"exit", b"137", b"123456", chunk=2))
    write("pilot", "execfail.bin", frame(b"execfail", b"exec /bin/nope: No such file or directory", chunk=0))
    write("pilot", "unclean.bin", frame(b"unclean", b"processes left after the task", chunk=7))
    write("pilot", "bad_exit_code.bin", frame(b"exit", b"256", chunk=3))
    write("pilot", "bad_trailing.bin", frame(b"exit", b"0") + b"junk")
    write("pilot", "bad_length.bin", bytes([1]) + struct.pack("<I", 5000) + b"exit\0")


# --- policies ----------------------------------------------------------------


def policies():
    key = b"\x07" * 32
    import base64

    line = "idlegrid-ed25519 " + base64.b64encode(key).decode() + " release"
    write(
        "policy",
        "full.yaml",
        "acceptJobs: true\nmaxRunSeconds: 3600\nallowedRuntimes: [runc]\nallowedJobClasses: [io-uring]\n"
        "reservedGpuMemory: 4Gi\nreservedCpu: 1\nallowedRegistries: [ghcr.io, \"127.0.0.1:5000\"]\n"
        "tenantGpuJobs: false\nasks:\n  \"NVIDIA GeForce RTX 4090\": 0.35\n  cpu-core: 0.01\n"
        "trustedImageKeys:\n  - keys/release.pub\n  - \"" + line + "\"\n"
        "lendGpus: [0, GPU-8f3e0000-0000-0000-0000-000000000000]\nmaxGpuTemp: 85\nmaxGpuPower: 300\n"
        "imageCache: 20Gi\ninputCache: 10Gi\n",
    )
    write(
        "policy",
        "pause.yaml",
        "pauseWhen:\n  ownerGpu: {processes: true, utilizationAbove: 50, ignoreProcesses: [obs]}\n"
        "  processes: [steam, cyberpunk2077.exe]\n  userActive: true\n  onBattery: true\n"
        '  hours: ["18:00-23:00", "22:00-07:00"]\n  resumeAfter: 30s\n  action: freeze\n'
        "  handBackAfter: 10m\n  gpuJobs: handBack\n",
    )
    write("policy", "paused.yaml", "acceptJobs: false\n")
    write("policy", "asks.yaml", "asks:\n  cpu-core: 0.30\n  RTX 4090: 0.30\n")
    write("policy", "bad_wrong_types.yaml", "acceptJobs: maybe\nmaxRunSeconds: -5\nasks: [1, 2]\nlendGpus: [gpu0]\n")
    write("policy", "bad_key.yaml", 'trustedImageKeys:\n  - "idlegrid-ed25519 AAAA owner"\nunknownKey: 1\n')
    write("policy", "bad_truncated.yaml", "pauseWhen:\n  hours: [\"18:00-2")


# --- receipts ----------------------------------------------------------------


def canonical(m):
    """receipt::CanonicalJson (src/receipt/canonical.cc) over a Python message."""
    from google.protobuf.descriptor import FieldDescriptor as F

    def string(s):
        out = b'"'
        for c in s.encode() if isinstance(s, str) else s:
            if c in (0x22, 0x5C):
                out += b"\\" + bytes([c])
            elif c < 0x20:
                out += b"\\u%04x" % c
            else:
                out += bytes([c])
        return out + b'"'

    def value(f, v):
        t = f.cpp_type
        if t == F.CPPTYPE_BOOL:
            return b"true" if v else b"false"
        if t in (F.CPPTYPE_INT32, F.CPPTYPE_INT64, F.CPPTYPE_UINT32, F.CPPTYPE_UINT64, F.CPPTYPE_ENUM):
            return str(int(v)).encode()
        if t == F.CPPTYPE_STRING:
            return (b'"' + v.hex().encode() + b'"') if f.type == F.TYPE_BYTES else string(v)
        if t == F.CPPTYPE_MESSAGE:
            return canonical(v)
        raise ValueError("floating point field " + f.full_name)

    parts = []
    for f in sorted(m.DESCRIPTOR.fields, key=lambda f: f.name):
        v = getattr(m, f.name)
        if f.label == F.LABEL_REPEATED:
            if f.full_name == "idlegrid.v1.OutputFile.chunks" and len(v) == 0:
                continue
            body = b"[" + b",".join(value(f, x) for x in v) + b"]"
        else:
            body = value(f, v)
        parts.append(string(f.name) + b":" + body)
    return b"{" + b",".join(parts) + b"}"


def receipts():
    try:
        sys.path.insert(0, os.path.join(BUILD, "gen", "python"))
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives import serialization
        from google.protobuf import json_format
        from idlegrid.v1 import idlegrid_pb2 as pb
    except ImportError as e:
        print("make_corpus: receipts skipped (%s)" % e, file=sys.stderr)
        return

    def raw(key):
        return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    node = Ed25519PrivateKey.from_private_bytes(b"\x01" * 32)
    coord = Ed25519PrivateKey.from_private_bytes(b"\x02" * 32)
    node_pub = raw(node)
    node_id = "n-" + hashlib.sha256(node_pub).hexdigest()[:16]

    s = pb.ReceiptStatement(job_id="j-1", task_index=3, attempt_id="a-1", lease_epoch=2, node_id=node_id)
    s.started_at_ms, s.finished_at_ms, s.exit_code = 1000, 61000, 0
    m = s.metering
    m.cpu_millis, m.cpu_source, m.gpu_millis, m.bytes_in, m.bytes_out, m.run_ms = 59000, "cgroup", 120000, 4096, 512, 60000
    g = m.gpus.add(uuid="GPU-00010203-0405-0607-0809-0a0b0c0d0e0f", samples=13, utilization_pct_mean=71)
    g.utilization_pct_max, g.memory_used_bytes_max, g.temperature_c_max = 99, 80 << 30, 78
    g.power_mw_mean, g.power_mw_max, g.throttle_reasons = 512000, 698000, 5
    p = s.provenance
    p.image_config_digest, p.image_manifest_digest = "sha256:" + "c" * 64, "sha256:" + "e" * 64
    p.job_spec_digest, p.driver, p.runtime, p.runtime_version = "sha256:" + "5" * 64, "runc", "runc", "runc version 1.1"
    p.job_user, p.kernel_release, p.node_id = "65534:65534 -> 100000:100000", "6.1.0", node_id
    p.node_key_fingerprint = "sha256:" + hashlib.sha256(node_pub).hexdigest()
    p.env_names.extend(["HOME", "PATH"])
    p.agent_version = "0.1.0"
    s.input_digests.append("sha256:" + "f" * 64)
    o = s.outputs.add(path="result.json", digest="sha256:" + "0" * 64, size=512)
    o.chunks.add(digest="sha256:" + "9" * 64, size=512)

    r = pb.Receipt(version=1, node_public_key=node_pub, provider="acme", assigned_at_ms=500)
    r.statement.CopyFrom(s)
    r.node_signature = node.sign(b"idlegrid-receipt-statement-v1\n" + canonical(s))
    r.started_at_ms, r.finished_at_ms, r.state = 1200, 61200, "SUCCEEDED"
    r.pricing_rule, r.price_per_hour_micro = "pay-as-ask", 350000
    r.charge_micro = 350000 * 60000 // 3600000
    r.coordinator_public_key = raw(coord)
    r.coordinator_signature = coord.sign(b"idlegrid-receipt-countersign-v1\n" + canonical(r))

    def dump(msg):
        return json_format.MessageToJson(msg, preserving_proto_field_name=True, indent=2) + "\n"

    write("receipt", "receipt.json", dump(r))
    overcharged = pb.Receipt()
    overcharged.CopyFrom(r)
    overcharged.charge_micro += 1
    write("receipt", "bad_overcharged.json", dump(overcharged))
    other_node = pb.Receipt()
    other_node.CopyFrom(r)
    other_node.statement.node_id = "n-0000000000000000"
    write("receipt", "bad_other_node.json", dump(other_node))
    write("receipt", "bad_truncated.json", dump(r)[:400])
    write("receipt", "bad_wrong_types.json", '{"version": "one", "statement": [], "node_public_key": 7}\n')


def main():
    shutil.rmtree(CORPUS, ignore_errors=True)
    for make in (tars, oci, registry, manifests, items, api_bodies, task_ranges, pilot, policies, receipts):
        make()
    for target in sorted(os.listdir(CORPUS)):
        print("%-20s %d seed(s)" % (target, len(os.listdir(os.path.join(CORPUS, target)))))


if __name__ == "__main__":
    main()
