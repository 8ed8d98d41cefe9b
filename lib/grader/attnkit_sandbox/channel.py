"""Files between the trusted grader and the sandboxed runner: probe inputs in, probe outputs and a report out.

Layout of a scratch folder (``SCRATCH``):
    SCRATCH/inputs.npz     arrays the probes feed to student code, keys "probe/key"    (trusted side writes)
    SCRATCH/inputs.json    {"probes": {probe: params}}, JSON-able parameters          (trusted side writes)
    SCRATCH/out/outputs.npz  arrays the probes got back, keys "probe/key"             (runner writes)
    SCRATCH/out/report.json  what happened to each cell and probe                      (runner writes)

Everything the runner produces was made by a process that ran student code, so the trusted side reads it
as hostile: :func:`decode_outputs` never unpickles (``allow_pickle=False``), reads each array's header
before its data, accepts only plain numeric or bool arrays under a byte budget and keys of the form
"probe/key"; :func:`parse_report` parses JSON of bounded size. Neither raises for bad content.

In the sandbox the runner writes no file for the parent: it builds outputs.npz and report.json in memory and
sends them over a pipe (:func:`send_file`, :func:`parse_channel`: a message is a header line ``NAME LENGTH``
and LENGTH bytes; messages with the same name are appended), and the parent decodes them from memory. The
out/ folder and :func:`read_outputs`/:func:`read_report` serve runs without a pipe (in this process, tests).
"""

import io
import json
import math
import os
import re
import zipfile
from pathlib import Path

import numpy as np

INPUTS_NPZ, INPUTS_JSON = "inputs.npz", "inputs.json"
OUT_DIR, OUTPUTS_NPZ, REPORT_JSON, PROGRESS_JSONL = "out", "outputs.npz", "report.json", "progress.jsonl"

NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")      # a probe name, an array key, a file name
NUMERIC_KINDS = "biufc"                                     # bool, signed, unsigned, float, complex
MAX_ARRAYS = 256                                            # arrays in one outputs.npz
MAX_ARRAY_BYTES = 32 * 2**20                                # bytes of one array's data
MAX_TOTAL_BYTES = 128 * 2**20                               # bytes of all arrays together
MAX_NDIM = 8
MAX_REPORT_BYTES = 16 * 2**20
MAX_MESSAGE_CHARS = 300                                     # an error message kept from the sandbox
ANY_PROBE = "*"                                             # key in the errors of read_outputs: the whole file


class ExchangeError(ValueError):
    """Something handed over between the grader and the runner breaks the contract above."""


# --- shared checks ---------------------------------------------------------------------------------------

def check_name(name, what):
    """Raise ValueError unless ``name`` is a plain name usable in "probe/key" and as a file name."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(f"{what}: expected a name of letters, digits, '_', '.', '-' (at most 64), got {name!r}")
    return name


def check_array(value, what, max_bytes=MAX_ARRAY_BYTES):
    """``value`` as a plain, native-order, numeric or bool ndarray; TypeError/ValueError otherwise.

    Python and NumPy scalars are accepted (as 0-d arrays); anything else must already be an ndarray
    (subclasses are copied into a plain array), so no foreign object's conversion hooks run here.
    """
    if isinstance(value, (bool, int, float, complex, np.generic)):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{what}: expected a numpy array, got {type(value).__name__}")
    dtype = value.dtype
    if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise TypeError(f"{what}: expected a numeric or bool array, got dtype {dtype}")
    if value.ndim > MAX_NDIM:
        raise ValueError(f"{what}: at most {MAX_NDIM} dimensions, got shape {value.shape}")
    if value.nbytes > max_bytes:
        raise ValueError(f"{what}: {value.nbytes} bytes, over the {max_bytes}-byte limit (shape {value.shape})")
    return np.array(value, dtype=dtype.newbyteorder("="), copy=True, subok=False)


def clip_message(text, limit=MAX_MESSAGE_CHARS):
    """The first non-empty line of ``text``, printable, at most ``limit`` characters (untrusted text)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    line = "".join(c if c.isprintable() else " " for c in (lines[0] if lines else ""))
    return line if len(line) <= limit else line[:limit - 3] + "..."


# --- inputs: trusted side writes, runner reads ----------------------------------------------------------

def write_inputs(directory, inputs):
    """Write ``inputs`` {probe: {"arrays": {key: ndarray}, "params": JSON-able}} into ``directory``."""
    directory = Path(directory)
    arrays, params = {}, {}
    for probe, entry in inputs.items():
        check_name(probe, "inputs: probe name")
        unknown = set(entry) - {"arrays", "params"}
        if unknown:
            raise ValueError(f"inputs[{probe!r}]: expected keys 'arrays' and 'params', got also {sorted(unknown)}")
        for key, value in entry.get("arrays", {}).items():
            check_name(key, f"inputs[{probe!r}] array key")
            arrays[f"{probe}/{key}"] = check_array(value, f"inputs[{probe!r}][{key!r}]")
        params[probe] = entry.get("params", {})
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"probes": params}, sort_keys=True, allow_nan=False)   # TypeError if not JSON-able
    np.savez(directory / INPUTS_NPZ, **arrays)
    (directory / INPUTS_JSON).write_text(text + "\n", encoding="utf-8")


def read_inputs(directory):
    """The inputs :func:`write_inputs` wrote in ``directory`` (same structure); {} when there are none."""
    directory = Path(directory)
    if not (directory / INPUTS_JSON).is_file():
        return {}
    params = json.loads((directory / INPUTS_JSON).read_text(encoding="utf-8"))["probes"]
    inputs = {probe: {"arrays": {}, "params": value} for probe, value in params.items()}
    if (directory / INPUTS_NPZ).is_file():
        with np.load(directory / INPUTS_NPZ, allow_pickle=False) as data:
            for name in data.files:
                probe, key = name.split("/", 1)
                inputs.setdefault(probe, {"arrays": {}, "params": {}})["arrays"][key] = data[name]
    return inputs


# --- outputs: runner writes, trusted side reads -----------------------------------------------------------

def encode_outputs(outputs):
    """``outputs`` {probe: {key: ndarray}} as the bytes of an outputs.npz, built in memory (arrays checked first)."""
    arrays = {}
    for probe, values in outputs.items():
        check_name(probe, "outputs: probe name")
        for key, value in values.items():
            check_name(key, f"outputs[{probe!r}] key")
            arrays[f"{probe}/{key}"] = check_array(value, f"outputs[{probe!r}][{key!r}]")
    if len(arrays) > MAX_ARRAYS:
        raise ValueError(f"outputs: {len(arrays)} arrays, over the limit of {MAX_ARRAYS}")
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def write_outputs(directory, outputs):
    """Write ``outputs`` {probe: {key: ndarray}} to ``directory``/outputs.npz (arrays checked first)."""
    data = encode_outputs(outputs)
    Path(directory).mkdir(parents=True, exist_ok=True)
    (Path(directory) / OUTPUTS_NPZ).write_bytes(data)


def read_outputs(directory, max_arrays=MAX_ARRAYS, max_array_bytes=MAX_ARRAY_BYTES,
                 max_total_bytes=MAX_TOTAL_BYTES):
    """:func:`decode_outputs` of the outputs.npz and report.json in ``directory`` (a run without a pipe)."""
    path = Path(directory) / OUTPUTS_NPZ
    data = path.read_bytes() if path.is_file() else None
    return decode_outputs(data, read_report(directory), max_arrays, max_array_bytes, max_total_bytes)


def decode_outputs(data, report, max_arrays=MAX_ARRAYS, max_array_bytes=MAX_ARRAY_BYTES,
                   max_total_bytes=MAX_TOTAL_BYTES):
    """({probe: {key: ndarray}}, {probe: reason}) from the bytes of an outputs.npz (None: none was sent) and
    the runner's ``report`` (a dict), both untrusted; never raises for their content.

    A probe with any rejected array is left out of the outputs and gets a reason. Reasons also come
    from the report (the runner's record of probes that raised). A problem with the whole file is
    reported under the key :data:`ANY_PROBE`. A probe missing from both dicts produced nothing.
    """
    errors = {}
    probes = report.get("probes") if isinstance(report, dict) else None
    for probe, entry in probes.items() if isinstance(probes, dict) else ():
        if NAME.fullmatch(probe) and isinstance(entry, dict) and isinstance(entry.get("error"), str):
            errors[probe] = clip_message(entry["error"]) or "the probe failed"
    if data is None:
        return {}, errors
    try:
        arrays, rejected = load_npz(io.BytesIO(data), max_arrays, max_array_bytes, max_total_bytes)
    except ExchangeError as error:
        errors[ANY_PROBE] = str(error)
        return {}, errors
    for name, reason in rejected.items():
        errors.setdefault(name.split("/", 1)[0], reason)
    outputs = {}
    for name, value in arrays.items():
        probe, key = name.split("/", 1)
        if probe not in errors:           # a probe that failed in any way contributes no arrays
            outputs.setdefault(probe, {})[key] = value
    return outputs, errors


def load_npz(source, max_arrays, max_array_bytes, max_total_bytes, label=OUTPUTS_NPZ):
    """({"probe/key": ndarray}, {"probe/key": reason}) from an untrusted .npz (a path or a file object);
    ExchangeError for the file as a whole."""
    arrays, rejected, total = {}, {}, 0
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise ExchangeError(f"{label} is not a readable .npz archive ({clip_message(error)})") from None
    with archive:
        members = archive.infolist()
        if len(members) > max_arrays:
            raise ExchangeError(f"{label} holds {len(members)} arrays, over the limit of {max_arrays}")
        for member in members:
            name = member.filename[:-4] if member.filename.endswith(".npy") else None
            parts = name.split("/") if name else []
            if len(parts) != 2 or not all(NAME.fullmatch(p) for p in parts):
                raise ExchangeError(f"{label}: member {clip_message(member.filename, 80)!r} is not 'probe/key.npy'")
            if name in arrays or name in rejected:
                raise ExchangeError(f"{label}: array {name!r} appears twice")
            try:
                value = read_member(archive, member, max_array_bytes)
            except ExchangeError as error:
                rejected[name] = f"output {name!r} rejected: {error}"
                continue
            total += value.nbytes
            if total > max_total_bytes:
                raise ExchangeError(f"{label}: arrays hold more than {max_total_bytes} bytes together")
            arrays[name] = value
    return arrays, rejected


def read_member(archive, member, max_bytes):
    """One .npy member: header checked (dtype, shape, size) before any data is read."""
    if member.file_size > max_bytes + 65536:
        raise ExchangeError(f"{member.file_size} bytes, over the {max_bytes}-byte limit")
    try:
        with archive.open(member) as handle:
            version = np.lib.format.read_magic(handle)
            if version not in ((1, 0), (2, 0)):
                raise ExchangeError(f".npy format version {version} is not accepted")
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read_header(handle)
            if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
                raise ExchangeError(f"dtype {dtype} is not numeric or bool")
            if len(shape) > MAX_NDIM or any(not isinstance(n, int) or n < 0 for n in shape):
                raise ExchangeError(f"shape {shape} is not allowed")
            nbytes = math.prod(shape) * dtype.itemsize
            if nbytes > max_bytes:
                raise ExchangeError(f"{nbytes} bytes, over the {max_bytes}-byte limit (shape {shape})")
            data = handle.read(nbytes + 1)
    except ExchangeError:
        raise
    except Exception as error:  # zipfile, zlib and numpy raise several types for broken content
        raise ExchangeError(f"unreadable ({type(error).__name__}: {clip_message(error, 120)})") from None
    if len(data) != nbytes:
        raise ExchangeError(f"holds {len(data)} bytes of data, its header says {nbytes}")
    value = np.frombuffer(data, dtype=dtype)
    value = value.reshape(shape[::-1]).T if fortran else value.reshape(shape)
    if dtype.kind == "b":                 # a bool byte other than 0 or 1 would compare oddly
        return np.array(value.view(np.uint8) != 0, dtype=bool)
    return np.array(value, dtype=dtype.newbyteorder("="), copy=True)


def read_report(directory, max_bytes=MAX_REPORT_BYTES):
    """report.json in ``directory`` as a dict; {} when absent, too large or not a JSON object."""
    path = Path(directory) / REPORT_JSON
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError:
        return {}
    return parse_report(data, max_bytes)


def parse_report(data, max_bytes=MAX_REPORT_BYTES):
    """The bytes of a report.json (untrusted) as a dict; {} when too large or not a JSON object."""
    if len(data) > max_bytes:
        return {}
    try:
        report = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return {}
    return report if isinstance(report, dict) else {}


# --- the pipe between runner and parent -------------------------------------------------------------------

def send_file(fd, name, data):
    """Send ``data`` (bytes) under ``name`` on the open file descriptor ``fd`` (appends to that name)."""
    check_name(name, "send_file: name")
    view = memoryview(f"{name} {len(data)}\n".encode("ascii") + bytes(data))
    while view:
        view = view[os.write(fd, view):]


def parse_channel(data, max_files=16):
    """({name: bytes}, problem or None) from what the runner sent; stops at the first malformed message."""
    files, position = {}, 0
    while position < len(data):
        end = data.find(b"\n", position, position + 100)
        header = data[position:end].decode("ascii", "replace").split(" ") if end >= 0 else []
        if len(header) != 2 or not NAME.fullmatch(header[0]) or not header[1].isdigit():
            return files, f"garbled message at byte {position} of the runner's channel"
        name, length = header[0], int(header[1])
        if end + 1 + length > len(data):
            return files, f"message {name!r} cut short (channel closed or over its size limit)"
        if name not in files and len(files) >= max_files:
            return files, f"more than {max_files} files sent on the runner's channel"
        files[name] = files.get(name, b"") + data[end + 1:end + 1 + length]
        position = end + 1 + length
    return files, None


def decode_jsonl(data, max_lines=10000):
    """The JSON objects of a JSON-lines byte string, skipping lines that are not JSON objects."""
    records = []
    for line in data.splitlines()[:max_lines]:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict):
            records.append(record)
    return records
