#pragma once
// What Debian 12's runsc (package runsc 0.0~20221219.0-2+b3, amd64) printed on a
// Debian 12 host, captured whole for the nvproxy detection test: `runsc
// --version` (stdout) and `runsc flags` (Go's flag listing, on stderr).
// Captured, not written: do not edit by hand.

namespace idlegrid::runtime::testing {

inline constexpr char kDebian12RunscVersion[] = R"runsc(runsc version 0.0~20221219.0
spec: 1.0.2-dev
)runsc";

inline constexpr char kDebian12RunscFlags[] = R"runsc(  -EXPERIMENTAL-afxdp
    	EXPERIMENTAL. Use an AF_XDP socket to receive packets.
  -TESTONLY-allow-packet-endpoint-write
    	TEST ONLY; do not ever use! Used for tests to allow writes on packet sockets.
  -TESTONLY-test-name-env string
    	TEST ONLY; do not ever use! Used for automated tests to improve logging.
  -TESTONLY-unsafe-nonroot
    	TEST ONLY; do not ever use! This skips many security measures that isolate the host from the sandbox.
  -allow-flag-override
    	allow OCI annotations (dev.gvisor.flag.<name>) to override flags for debugging.
  -alsologtostderr
    	send log messages to stderr.
  -buffer-pooling
    	enable allocation of buffers from a shared pool instead of the heap. (default true)
  -cgroupfs
    	Automatically mount cgroupfs.
  -coverage-fd int
    	file descriptor to write Go coverage output. (default -1)
  -coverage-report string
    	file path where Go coverage reports are written. Reports will only be generated if runsc is built with --collect_code_coverage and --instrumentation_filter Bazel flags.
  -cpu-num-from-quota
    	set cpu number to cpu quota (least integer greater or equal to quota value, but not less than 2)
  -dcache int
    	Set the global dentry cache size. This acts as a coarse-grained control on the number of host FDs simultaneously open by the sentry. If negative, per-mount caches are used. (default -1)
  -debug
    	enable debug logging.
  -debug-command string
    	comma-separated list of commands to be debugged if --debug-log is also set. Empty means debug all. "!" negates the expression. E.g. "create,start" or "!boot,events"
  -debug-log string
    	additional location for logs. If it ends with '/', log files are created inside the directory with default names. The following variables are available: %TIMESTAMP%, %COMMAND%.
  -debug-log-fd int
    	file descriptor to write debug logs to.  If set, the 'debug-log-dir' flag is ignored. (default -1)
  -debug-log-format string
    	log format: text (default), json, or json-k8s. (default "text")
  -enable-core-tags
    	enables core tagging. Requires host linux kernel >= 5.14.
  -fdlimit int
    	Specifies a limit on the number of host file descriptors that can be open. Applies separately to the sentry and gofer. Note: each file in the sandbox holds more than one host FD open. (default -1)
  -file-access value
    	specifies which filesystem validation to use for the root mount: exclusive (default), shared.
  -file-access-mounts value
    	specifies which filesystem validation to use for volumes other than the root mount: shared (default), exclusive. (default shared)
  -fsgofer-host-uds
    	DEPRECATED: use host-uds=all
  -fuse
    	DEPRECATED: this flag has no effect. (default true)
  -gso
    	enable host segmentation offload if it is supported by a network device. (default true)
  -gvisor-gro duration
    	(e.g. "20000ns" or "1ms") sets gVisor's generic receive offload timeout. Zero bypasses GRO.
  -host-fifo value
    	controls permission to access host FIFOs (or named pipes). Values: none|open, default: none
  -host-uds value
    	controls permission to access host Unix-domain sockets. Values: none|open|create|all, default: none
  -ignore-cgroups
    	don't configure cgroups.
  -lisafs
    	DEPRECATED: this flag has no effect. (default true)
  -log string
    	file path where internal debug information is written, default is stdout.
  -log-fd int
    	file descriptor to log to.  If set, the 'log' flag is ignored. (default -1)
  -log-format string
    	log format: text (default), json, or json-k8s. (default "text")
  -log-packets
    	enable network packet logging.
  -net-raw runsc exec
    	enable raw sockets. When false, raw sockets are disabled by removing CAP_NET_RAW from containers (runsc exec will still be able to utilize raw sockets). Raw sockets allow malicious containers to craft packets and potentially attack the network.
  -network value
    	specifies which network to use: sandbox (default), host, none. Using network inside the sandbox is more secure because it's isolated from the host network.
  -num-network-channels int
    	number of underlying channels(FDs) to use for network link endpoints. (default 1)
  -oci-seccomp
    	Enables loading OCI seccomp filters inside the sandbox.
  -overlay
    	DEPRECATED: use --overlay2=all:memory to achieve the same effect
  -overlay2 value
    	wrap mounts with overlayfs. Format is {mount}:{medium}, where 'mount' can be 'root' or 'all' and medium can be 'memory' or existing directory path in which filestore will be created. 'none' will turn overlay mode off.
  -panic-log string
    	file path where panic reports and other Go's runtime messages are written.
  -panic-log-fd int
    	file descriptor to write Go's runtime messages. (default -1)
  -panic-signal int
    	register signal handling that panics. Usually set to SIGUSR2(12) to troubleshoot hangs. -1 disables it. (default -1)
  -pcap-log string
    	location of PCAP log file.
  -platform string
    	specifies which platform to use: ptrace (default), kvm. (default "ptrace")
  -platform_device_path string
    	path to a platform-specific device file (e.g. /dev/kvm for KVM platform). If unset, will use a sane platform-specific default.
  -pod-init-config string
    	path to configuration file with additional steps to take during pod creation.
  -profile
    	prepares the sandbox to use Golang profiler. Note that enabling profiler loosens the seccomp protection added to the sandbox (DO NOT USE IN PRODUCTION).
  -profile-block string
    	collects a block profile to this file path for the duration of the container execution. Requires -profile=true.
  -profile-cpu string
    	collects a CPU profile to this file path for the duration of the container execution. Requires -profile=true.
  -profile-heap string
    	collects a heap profile to this file path for the duration of the container execution. Requires -profile=true.
  -profile-mutex string
    	collects a mutex profile to this file path for the duration of the container execution. Requires -profile=true.
  -qdisc value
    	specifies which queueing discipline to apply by default to the non loopback nics used by the sandbox. (default fifo)
  -ref-leak-mode value
    	sets reference leak check mode: disabled (default), log-names, log-traces.
  -root string
    	root directory for storage of container state.
  -rootless
    	it allows the sandbox to be started with a user that is not root. Sandbox and Gofer processes may run with same privileges as current user.
  -rx-checksum-offload
    	enable RX checksum offload. (default true)
  -software-gso
    	enable gVisor segmentation offload when host offload can't be enabled. (default true)
  -strace
    	enable strace.
  -strace-event
    	send strace to event.
  -strace-log-size uint
    	default size (in bytes) to log data argument blobs. (default 1024)
  -strace-syscalls string
    	comma-separated list of syscalls to trace. If --strace is true and this list is empty, then all syscalls will be traced.
  -systemd-cgroup
    	EXPERIMENTAL. Use systemd for cgroups.
  -trace string
    	collects a Go runtime execution trace to this file path for the duration of the container execution.
  -traceback string
    	golang runtime's traceback level (default "system")
  -tx-checksum-offload
    	enable TX checksum offload.
  -version
    	show version and exit.
  -vfs2
    	DEPRECATED: this flag has no effect. (default true)
  -watchdog-action value
    	sets what action the watchdog takes when triggered: log (default), panic.
)runsc";

}  // namespace idlegrid::runtime::testing
