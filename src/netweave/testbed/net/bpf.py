"""BPF programs of the testbed: compiled with clang at first use, loaded through libbpf.

* :func:`compile_program` builds a program shipped in this package (``net/bpf/impair.bpf.c``,
  ``agg/bpf/ina_agg.bpf.c``) with ``-D`` defines into an object, cached by the hash of the source
  and the defines (:func:`~.native.cached_build`);
* :func:`libbpf` is ``libbpf.so.1`` through ctypes, with the signatures the loaders use.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import shutil
import subprocess
from pathlib import Path

from ...errors import NetweaveError
from .native import cached_build, cached_path, digest, package_source


def _flags(defines: dict[str, int] | None) -> list[str]:
    return [f"-D{k}={int(v)}" for k, v in sorted((defines or {}).items())]


def _cache_name(source: str, defines: dict[str, int] | None) -> tuple[str, str]:
    """``(stem, key)`` of the object in the cache: the source's name and the hash of it and the defines."""
    src = package_source(source)
    return src.name.split(".")[0], digest(src.read_bytes(), " ".join(_flags(defines)))


def object_path(source: str, defines: dict[str, int] | None = None, cache: Path | None = None) -> Path:
    """Where :func:`compile_program` keeps the object of ``source`` with ``defines`` (built or not)."""
    return cached_path("bpf", *_cache_name(source, defines), ".o", cache)


def can_build(source: str, defines: dict[str, int] | None = None) -> bool:
    """Whether :func:`compile_program` can give this object here: it is in the cache (compiled
    earlier, or brought by ``scripts/offline_kit.py``), or clang is there to compile it."""
    return shutil.which("clang") is not None or object_path(source, defines).exists()


def compile_program(source: str, defines: dict[str, int] | None = None, cache: Path | None = None) -> Path:
    """The BPF object of ``source`` (a path in the ``netweave.testbed`` package, e.g.
    ``agg/bpf/ina_agg.bpf.c``) with ``-D`` ``defines``, compiled with clang at first use (an object
    already in the cache needs no clang: a machine without it can be given the objects)."""
    src = package_source(source)
    flags = _flags(defines)

    def build(tmp: Path) -> None:
        clang = shutil.which("clang")
        if clang is None:
            raise NetweaveError(f"the testbed's BPF program {src.name} is not compiled here and needs clang; install "
                                "it with apt-get install clang llvm libbpf-dev (or use --dataplane user)")
        arch = os.uname().machine
        done = subprocess.run([clang, "-O2", "-g", "-target", "bpf", f"-I/usr/include/{arch}-linux-gnu", *flags, "-c",
                               str(src), "-o", str(tmp)], capture_output=True, text=True)
        if done.returncode:
            first = next((l for l in done.stderr.splitlines() if "error" in l), done.stderr.strip()[:200])
            raise NetweaveError(f"clang could not compile {src.name}: {first}; install libbpf-dev (bpf_helpers.h)")

    return cached_build("bpf", *_cache_name(source, defines), ".o", build, cache)


PASS = "net/bpf/pass.bpf.c"
PLAIN_PATH = re.compile(r"[A-Za-z0-9_./+-]+")  # a path that may stand in an ip/tc command line


def plain_object(source: str, defines: dict[str, int] | None = None) -> Path:
    """:func:`compile_program`, refused when the object's path holds characters that ``ip`` or
    ``tc`` could misread (a cache directory with a space or a newline: ``$XDG_CACHE_HOME``)."""
    path = compile_program(source, defines)
    if not PLAIN_PATH.fullmatch(str(path)):
        raise NetweaveError(f"the BPF object's path {ascii(str(path))} has characters iproute2 would misread; "
                            "point XDG_CACHE_HOME at a plain directory")
    return path


def attach_pass(namespace: str, interface: str) -> None:
    """Attach the pass program to ``interface`` of ``namespace`` (a host's uplink): veth delivers
    frames a switch redirects (a devmap broadcast) only to a peer with an XDP program. It goes with
    the namespace."""
    from .netns import run

    run(["ip", "-n", namespace, "link", "set", "dev", interface, "xdp", "obj", str(plain_object(PASS)), "sec", "xdp"])


RING_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


def libbpf() -> ctypes.CDLL:
    """``libbpf.so.1`` with the argument and result types of the functions the loaders call."""
    name = ctypes.util.find_library("bpf") or "libbpf.so.1"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError:
        raise NetweaveError("the XDP data plane needs libbpf (libbpf.so.1); install it with apt-get install "
                            "libbpf-dev") from None
    vp, i, u32 = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32
    for fn, res, args in (("bpf_object__open_file", vp, [ctypes.c_char_p, vp]), ("bpf_object__load", i, [vp]),
                          ("bpf_object__close", None, [vp]), ("bpf_object__find_map_by_name", vp, [vp, ctypes.c_char_p]),
                          ("bpf_object__find_program_by_name", vp, [vp, ctypes.c_char_p]),
                          ("bpf_map__set_max_entries", i, [vp, u32]), ("bpf_map__fd", i, [vp]),
                          ("bpf_program__attach_xdp", vp, [vp, i]), ("bpf_link__destroy", i, [vp]),
                          ("bpf_map_update_elem", i, [i, vp, vp, ctypes.c_uint64]),
                          ("bpf_map_lookup_elem", i, [i, vp, vp]), ("bpf_map_delete_elem", i, [i, vp]),
                          ("libbpf_num_possible_cpus", i, []), ("bpf_obj_get_info_by_fd", i, [i, vp, vp]),
                          ("bpf_program__fd", i, [vp]),
                          ("ring_buffer__new", vp, [i, vp, vp, vp]), ("ring_buffer__poll", i, [vp, i]),
                          ("ring_buffer__free", None, [vp])):
        f = getattr(lib, fn)
        f.restype, f.argtypes = res, args
    return lib


def possible_cpus(path: str = "/sys/devices/system/cpu/possible") -> int:
    """The highest CPU this kernel may bring up, plus one (``bpf_get_smp_processor_id`` is below
    it, where the possible CPUs have gaps too: ``0-3,8-11`` gives 12): the entries of a map a CPU."""
    try:
        with open(path) as f:
            text = f.read().strip()
        return 1 + max(int(part.split("-")[-1]) for part in text.split(","))
    except (OSError, ValueError) as e:
        raise NetweaveError(f"{path}: cannot read this machine's possible CPUs ({e}); the kernel switch "
                            "keeps a scratch a CPU") from None


class ProgInfo(ctypes.Structure):  # the head of struct bpf_prog_info, up to verified_insns (5.16)
    _fields_ = [("type", ctypes.c_uint32), ("id", ctypes.c_uint32), ("tag", ctypes.c_uint8 * 8),
                ("jited_prog_len", ctypes.c_uint32), ("xlated_prog_len", ctypes.c_uint32),
                ("jited_prog_insns", ctypes.c_uint64), ("xlated_prog_insns", ctypes.c_uint64),
                ("load_time", ctypes.c_uint64), ("created_by_uid", ctypes.c_uint32), ("nr_map_ids", ctypes.c_uint32),
                ("map_ids", ctypes.c_uint64), ("name", ctypes.c_char * 16), ("ifindex", ctypes.c_uint32),
                ("gpl_compatible", ctypes.c_uint32), ("netns_dev", ctypes.c_uint64), ("netns_ino", ctypes.c_uint64),
                ("nr_jited_ksyms", ctypes.c_uint32), ("nr_jited_func_lens", ctypes.c_uint32),
                ("jited_ksyms", ctypes.c_uint64), ("jited_func_lens", ctypes.c_uint64), ("btf_id", ctypes.c_uint32),
                ("func_info_rec_size", ctypes.c_uint32), ("func_info", ctypes.c_uint64),
                ("nr_func_info", ctypes.c_uint32), ("nr_line_info", ctypes.c_uint32), ("line_info", ctypes.c_uint64),
                ("jited_line_info", ctypes.c_uint64), ("nr_jited_line_info", ctypes.c_uint32),
                ("line_info_rec_size", ctypes.c_uint32), ("jited_line_info_rec_size", ctypes.c_uint32),
                ("nr_prog_tags", ctypes.c_uint32), ("prog_tags", ctypes.c_uint64), ("run_time_ns", ctypes.c_uint64),
                ("run_cnt", ctypes.c_uint64), ("recursion_misses", ctypes.c_uint64), ("verified_insns", ctypes.c_uint32),
                ("pad", ctypes.c_uint32)]


VERIFIER_LIMIT = 1_000_000  # instructions the kernel's verifier walks at most (BPF_COMPLEXITY_LIMIT_INSNS)


class XdpObject:
    """A BPF object opened and loaded through libbpf, its XDP program attached to interfaces of the
    current namespace as BPF links (detached when they close: at :meth:`close`, or when the
    process ends), its maps written and read by name. Context manager.

    Args:
        path: the compiled object; program: the XDP program's name; interfaces: where it attaches;
        max_entries: map name → entries, set before loading (a switch's memory); what: the
        object's name in error lines.
    """

    def __init__(self, path: Path, program: str, interfaces: list[str], max_entries: dict[str, int] | None = None,
                 what: str = "the XDP program"):
        self.what, self.lib, self.links = what, libbpf(), []
        self.obj = self.lib.bpf_object__open_file(str(path).encode(), None)
        if not self.obj:
            raise NetweaveError(f"libbpf could not open {what} (errno {ctypes.get_errno()})")
        try:
            for name, entries in (max_entries or {}).items():
                self.lib.bpf_map__set_max_entries(self.map(name), max(1, int(entries)))
            if self.lib.bpf_object__load(self.obj):
                raise NetweaveError(f"the kernel refused {what} (verifier); run with LIBBPF_LOG_LEVEL=debug")
            self.prog = self.lib.bpf_object__find_program_by_name(self.obj, program.encode())
            if not self.prog:
                raise NetweaveError(f"{what} has no program {program!r}")
            self._interfaces = list(interfaces)
        except BaseException:
            self.close()
            raise

    def attach(self) -> None:
        """Attach the program to every interface given."""
        import socket

        for dev in self._interfaces:
            link = self.lib.bpf_program__attach_xdp(self.prog, socket.if_nametoindex(dev))
            if not link:
                raise NetweaveError(f"could not attach {self.what} to {dev} (errno {ctypes.get_errno()})")
            self.links.append(link)

    def info(self) -> ProgInfo | None:
        """The kernel's ``bpf_prog_info`` of the program, or None where it cannot be read:
        ``run_cnt``, ``run_time_ns`` (counted while ``kernel.bpf_stats_enabled`` is 1) and
        ``verified_insns``, the instructions its verifier walked (0 before kernel 5.16), against
        :data:`VERIFIER_LIMIT`."""
        info = ProgInfo()
        size = ctypes.c_uint32(ctypes.sizeof(info))
        if self.lib.bpf_obj_get_info_by_fd(self.lib.bpf_program__fd(self.prog), ctypes.byref(info), ctypes.byref(size)):
            return None
        return info

    def map(self, name: str):
        m = self.lib.bpf_object__find_map_by_name(self.obj, name.encode())
        if not m:
            raise NetweaveError(f"{self.what} has no map {name!r}")
        return m

    def fd(self, name: str) -> int:
        return self.lib.bpf_map__fd(self.map(name))

    def update(self, name: str, key: bytes, value: bytes) -> None:
        k, v = ctypes.create_string_buffer(key, len(key)), ctypes.create_string_buffer(value, len(value))
        if self.lib.bpf_map_update_elem(self.fd(name), k, v, 0):
            raise NetweaveError(f"could not write the map {name!r} of {self.what} (errno {ctypes.get_errno()})")

    def lookup(self, name: str, key: bytes, size: int) -> bytes | None:
        """The ``size``-byte value of ``key`` in the map ``name`` (None: no such entry)."""
        k, v = ctypes.create_string_buffer(key, len(key)), ctypes.create_string_buffer(size)
        return None if self.lib.bpf_map_lookup_elem(self.fd(name), k, v) else v.raw

    def delete(self, name: str, key: bytes) -> None:
        self.lib.bpf_map_delete_elem(self.fd(name), ctypes.create_string_buffer(key, len(key)))

    def percpu_values(self, name: str, index: int) -> list[int]:
        """Entry ``index`` of the per-CPU array of u64 ``name``: its value on each possible CPU."""
        values = (ctypes.c_uint64 * self.lib.libbpf_num_possible_cpus())()
        self.lib.bpf_map_lookup_elem(self.fd(name), ctypes.byref(ctypes.c_uint32(index)), values)
        return [int(v) for v in values]

    def percpu_counters(self, name: str, names: tuple[str, ...]) -> dict[str, int]:
        """A per-CPU array of u64 counters, summed over CPUs, by ``names`` (its indexes' order)."""
        return {counter: sum(self.percpu_values(name, i)) for i, counter in enumerate(names)}

    def close(self) -> None:
        for link in self.links:
            self.lib.bpf_link__destroy(link)
        self.links = []
        if getattr(self, "obj", None):
            self.lib.bpf_object__close(self.obj)
            self.obj = None

    def __enter__(self) -> "XdpObject":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class TcHook(ctypes.Structure):  # libbpf's struct bpf_tc_hook
    _fields_ = [("sz", ctypes.c_size_t), ("ifindex", ctypes.c_int), ("attach_point", ctypes.c_int),
                ("parent", ctypes.c_uint32), ("pad", ctypes.c_uint32)]


class TcOpts(ctypes.Structure):  # libbpf's struct bpf_tc_opts
    _fields_ = [("sz", ctypes.c_size_t), ("prog_fd", ctypes.c_int), ("flags", ctypes.c_uint32),
                ("prog_id", ctypes.c_uint32), ("handle", ctypes.c_uint32), ("priority", ctypes.c_uint32),
                ("pad", ctypes.c_uint32)]


BPF_TC_INGRESS, BPF_TC_EGRESS = 1, 2


class TcObject(XdpObject):
    """:class:`XdpObject` whose program is a tc classifier (direct action): :meth:`attach_tc`
    attaches it at the clsact ingress or egress of interfaces of the current namespace (the hook
    made where there is none); :meth:`close` detaches it."""

    def __init__(self, *args, **kwargs):
        self.hooks = []
        super().__init__(*args, **kwargs)
        for fn, res, args in (("bpf_tc_hook_create", ctypes.c_int, [ctypes.c_void_p]),
                              ("bpf_tc_attach", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
                              ("bpf_tc_detach", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p])):
            f = getattr(self.lib, fn)
            f.restype, f.argtypes = res, args

    def attach_tc(self, interfaces: list[str], *, egress: bool, priority: int = 0) -> None:
        """Attach at ``interfaces``' tc ingress or ``egress`` (``priority``: 0, the kernel's choice;
        a lower number runs first)."""
        import socket

        fd = self.lib.bpf_program__fd(self.prog)
        for dev in interfaces:
            hook = TcHook(ctypes.sizeof(TcHook), socket.if_nametoindex(dev), BPF_TC_EGRESS if egress else BPF_TC_INGRESS,
                          0, 0)
            made = self.lib.bpf_tc_hook_create(ctypes.byref(hook))
            if made and made != -17:  # EEXIST: the impairments' clsact is there already
                raise NetweaveError(f"could not add a clsact hook to {dev} (error {made})")
            opts = TcOpts(ctypes.sizeof(TcOpts), fd, 0, 0, 0, priority, 0)
            if self.lib.bpf_tc_attach(ctypes.byref(hook), ctypes.byref(opts)):
                raise NetweaveError(f"could not attach {self.what} to {dev}")
            self.hooks.append((hook, opts.handle, opts.priority))

    def close(self) -> None:
        for hook, handle, priority in self.hooks:
            opts = TcOpts(ctypes.sizeof(TcOpts), 0, 0, 0, handle, priority, 0)
            self.lib.bpf_tc_detach(ctypes.byref(hook), ctypes.byref(opts))
        self.hooks = []
        super().close()
