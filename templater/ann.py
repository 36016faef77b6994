"""A one-hidden-layer neural network in numpy: standardised inputs, tanh hidden units, a sigmoid output.

The founding notes trained their line classifier with FANN; this is the same shape of network without the
dependency. Training is full-batch Adam on weighted cross-entropy from a fixed seed, so the same data and
settings give the same weights.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from . import native
from .config import ADAM_BETAS, ADAM_EPSILON, INIT_SCALE, L2_PENALTY, LEARNING_RATE, MIN_STD


@dataclass(frozen=True, slots=True)
class Network:
    """A trained network: input standardisation, then input -> tanh(hidden) -> sigmoid(1)."""

    mean: np.ndarray  # (inputs,)
    std: np.ndarray  # (inputs,)
    hidden_weights: np.ndarray  # (inputs, hidden)
    hidden_bias: np.ndarray  # (hidden,)
    output_weights: np.ndarray  # (hidden,)
    output_bias: float

    @property
    def inputs(self) -> int:
        return len(self.mean)

    def to_arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The arrays to store with numpy.savez, each name prefixed (several networks share one file)."""
        return {f"{prefix}mean": self.mean, f"{prefix}std": self.std, f"{prefix}hidden_weights": self.hidden_weights,
                f"{prefix}hidden_bias": self.hidden_bias, f"{prefix}output_weights": self.output_weights,
                f"{prefix}output_bias": np.array(self.output_bias)}

    @classmethod
    def from_arrays(cls, arrays, prefix: str) -> "Network":
        return cls(mean=np.asarray(arrays[f"{prefix}mean"], dtype=np.float64),
                   std=np.asarray(arrays[f"{prefix}std"], dtype=np.float64),
                   hidden_weights=np.asarray(arrays[f"{prefix}hidden_weights"], dtype=np.float64),
                   hidden_bias=np.asarray(arrays[f"{prefix}hidden_bias"], dtype=np.float64),
                   output_weights=np.asarray(arrays[f"{prefix}output_weights"], dtype=np.float64),
                   output_bias=float(arrays[f"{prefix}output_bias"]))


def predict(network: Network, inputs: np.ndarray) -> np.ndarray:
    """Probability of the positive class per row."""
    if not len(inputs):
        return np.zeros(0)
    # The same operations as tanh(((inputs - mean) / std) @ W + b), sigmoid(hidden @ w + b), done in place.
    scaled = inputs - network.mean
    scaled /= network.std
    return _forward(network, scaled)


def predict_mean(networks, inputs: np.ndarray) -> np.ndarray:
    """The mean probability of an ensemble of networks.

    Where the C extension (templater._numeric) is built, an ensemble whose members share their standardisation is
    run there in one call (the numpy code below is the definition; the C scores agree with it to rounding, see
    _predict_mean_c)."""
    found = _predict_mean_c(networks, inputs)
    if found is not None:
        return found
    return _predict_mean_numpy(networks, inputs)


def _predict_mean_numpy(networks, inputs: np.ndarray) -> np.ndarray:
    """predict_mean in numpy: the definition."""
    if len(inputs) and len(networks) > 1 and _shared_scaling(networks):
        # members trained on the same inputs share mean and std: standardise once (the same numbers)
        scaled = inputs - networks[0].mean
        scaled /= networks[0].std
        return np.mean([_forward(network, scaled) for network in networks], axis=0)
    return np.mean([predict(network, inputs) for network in networks], axis=0)


_SHARED: dict[int, tuple[object, bool]] = {}


def _shared_scaling(networks) -> bool:
    """Whether all networks have the same mean and std arrays (remembered per ensemble object)."""
    known = _SHARED.get(id(networks))
    if known is None or known[0] is not networks:
        first = networks[0]
        known = _SHARED[id(networks)] = (networks, all(
            np.array_equal(first.mean, n.mean) and np.array_equal(first.std, n.std) and n.mean.dtype == first.mean.dtype
            and n.std.dtype == first.std.dtype for n in networks))
    return known[1]


def _predict_mean_c(networks, inputs: np.ndarray) -> np.ndarray | None:
    """predict_mean in C (templater._numeric.ensemble), or None where it does not apply: no C extension, members
    that do not share their standardisation or differ in shape, anything not float64, inputs not a C-contiguous
    (rows, inputs) array. The standardisation gives numpy's floats; the weighted sums are added in another
    order than numpy's matmul adds them (fused where the CPU has FMA) and tanh/exp are computed in the C code,
    so a score may differ from the numpy one in its last bits (tests/test_speedups.py holds them to 1e-12)."""
    numeric = native.numeric
    if numeric is None or not isinstance(inputs, np.ndarray) or inputs.dtype != np.float64 or inputs.ndim != 2 \
            or not inputs.flags.c_contiguous:
        return None
    packed = packed_ensemble(networks)
    if packed is None or inputs.shape[1] != len(networks[0].mean):
        return None
    out = np.empty(len(inputs))
    numeric.ensemble(packed, inputs, out, len(inputs), inputs.shape[1], len(networks[0].hidden_bias), len(networks))
    return out


_PACKED: dict[int, tuple[object, np.ndarray | None]] = {}


def packed_ensemble(networks) -> np.ndarray | None:
    """An ensemble's weights laid out for templater._numeric.ensemble (remembered per ensemble object, as
    _shared_scaling does): mean, std, the members' hidden weights side by side (inputs x members*hidden), their
    hidden biases, output weights and output biases; None when the C pass does not apply to the ensemble."""
    known = _PACKED.get(id(networks))
    if known is None or known[0] is not networks:
        known = _PACKED[id(networks)] = (networks, _pack(networks))
    return known[1]


def _pack(networks) -> np.ndarray | None:
    if not len(networks) or not (len(networks) == 1 or _shared_scaling(networks)):
        return None
    first = networks[0]
    width, hidden = len(first.mean), len(first.hidden_bias)
    arrays = [a for n in networks for a in (n.mean, n.std, n.hidden_weights, n.hidden_bias, n.output_weights)]
    if any(not isinstance(a, np.ndarray) or a.dtype != np.float64 for a in arrays) or any(
            n.mean.shape != (width,) or n.std.shape != (width,) or n.hidden_weights.shape != (width, hidden)
            or n.hidden_bias.shape != (hidden,) or n.output_weights.shape != (hidden,) for n in networks):
        return None
    return np.concatenate([first.mean, first.std, np.hstack([n.hidden_weights for n in networks]).ravel(),
                           *[n.hidden_bias for n in networks], *[n.output_weights for n in networks],
                           np.array([float(n.output_bias) for n in networks])])


def _forward(network: Network, scaled: np.ndarray) -> np.ndarray:
    """predict() after the standardisation."""
    hidden = scaled @ network.hidden_weights
    hidden += network.hidden_bias
    np.tanh(hidden, out=hidden)
    output = hidden @ network.output_weights
    output += network.output_bias
    return _sigmoid_in_place(output)


def fit_network(inputs: np.ndarray, labels: np.ndarray, *, weights: np.ndarray | None = None, hidden: int,
                epochs: int, seed: int, l2: float = L2_PENALTY) -> Network:
    """Fit a network by full-batch Adam on weighted cross-entropy, from a seeded initialisation."""
    inputs = np.asarray(inputs, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    weights = np.ones(len(labels)) if weights is None else np.asarray(weights, dtype=np.float64)
    weights = weights / weights.sum()
    mean = inputs.mean(axis=0)
    std = inputs.std(axis=0)
    std = np.where(std < MIN_STD, 1.0, std)
    scaled = (inputs - mean) / std
    rng = np.random.default_rng(seed)
    params = [rng.normal(0.0, INIT_SCALE / np.sqrt(inputs.shape[1]), (inputs.shape[1], hidden)),
              np.zeros(hidden), rng.normal(0.0, 1.0 / np.sqrt(hidden), hidden), np.zeros(1)]
    moments = [np.zeros_like(p) for p in params]
    squares = [np.zeros_like(p) for p in params]
    for step in range(1, epochs + 1):
        grads = _gradients(params, scaled, labels, weights, l2)
        for p, g, m, v in zip(params, grads, moments, squares):
            m *= ADAM_BETAS[0]
            m += (1 - ADAM_BETAS[0]) * g
            v *= ADAM_BETAS[1]
            v += (1 - ADAM_BETAS[1]) * g * g
            m_hat = m / (1 - ADAM_BETAS[0] ** step)
            v_hat = v / (1 - ADAM_BETAS[1] ** step)
            p -= LEARNING_RATE * m_hat / (np.sqrt(v_hat) + ADAM_EPSILON)
    return Network(mean=mean, std=std, hidden_weights=params[0], hidden_bias=params[1], output_weights=params[2],
                   output_bias=float(params[3][0]))


def _gradients(params, scaled, labels, weights, l2):
    w1, b1, w2, b2 = params
    hidden = np.tanh(scaled @ w1 + b1)
    output = _sigmoid(hidden @ w2 + b2[0])
    error = (output - labels) * weights  # d(weighted cross-entropy) / d(logit)
    grad_w2 = hidden.T @ error + l2 * w2
    grad_b2 = np.array([error.sum()])
    back = np.outer(error, w2) * (1 - hidden * hidden)
    grad_w1 = scaled.T @ back + l2 * w1
    grad_b1 = back.sum(axis=0)
    return grad_w1, grad_b1, grad_w2, grad_b2


def _sigmoid(values: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(values, -50, 50)))


def _sigmoid_in_place(values: np.ndarray) -> np.ndarray:
    """_sigmoid(values), overwriting values (a float64 array of the caller's own)."""
    np.clip(values, -50, 50, out=values)
    np.negative(values, out=values)
    np.exp(values, out=values)
    values += 1.0
    return np.divide(1.0, values, out=values)


@dataclass(frozen=True, slots=True)
class Weights:
    """Everything the single-page methods learned: the notes' nine-input line network, the two stages of the
    default classifier (each an ensemble whose outputs are averaged), and the scores the default
    classifier gave boilerplate blocks it had not been trained on (the null distribution of the FDR method).

    Weights trained on a genre-mixed set (training.train_mixture) also hold an expert: the two stages
    ``first``/``second`` were fitted on every page, ``expert_first``/``expert_second`` on the pages of one source
    (config.EXPERT_SOURCE, news) only; the default classifier scores a block with the mean of both pairs' scores.
    """

    line: Network
    first: tuple[Network, ...]
    second: tuple[Network, ...]
    null_scores: np.ndarray  # sorted ascending
    features: tuple[str, ...]  # the block feature names the networks were trained on, in column order
    info: str = "{}"  # JSON: how the weights were made (seed, sizes, pages)
    expert_first: tuple[Network, ...] = ()
    expert_second: tuple[Network, ...] = ()


def save_weights(weights: Weights, target) -> None:
    """Write weights to a path or binary file object as one compressed .npz archive."""
    arrays = weights.line.to_arrays("line_")
    for stage, networks in (("first", weights.first), ("second", weights.second),
                            ("expert_first", weights.expert_first), ("expert_second", weights.expert_second)):
        for number, network in enumerate(networks):
            arrays.update(network.to_arrays(f"{stage}{number}_"))
    arrays["null_scores"] = weights.null_scores
    arrays["features"] = np.array(weights.features)
    arrays["info"] = np.array(weights.info)
    np.savez_compressed(target, **arrays)


def read_weights(source) -> Weights:
    """Read weights written by save_weights from a path or binary file object."""
    arrays = _cached_npz(source)
    if arrays is None:
        if hasattr(source, "seek"):
            source.seek(0)
        arrays = _plain_npz(source)
    if arrays is not None:
        return _weights_from(arrays)
    if hasattr(source, "seek"):
        source.seek(0)
    with np.load(source, allow_pickle=False) as arrays:
        return _weights_from(arrays)


WEIGHTS_CACHE_FORMAT = 1  # a cached archive: crc32 of the rest (4 bytes, little-endian), then marshal((format,
# the archive's bytes, {name: (dtype, shape, the array's C-ordered bytes)}))


def _cached_npz(source) -> _Arrays | None:
    """The arrays of an .npz archive as ``_plain_npz`` reads them, from an uncompressed copy in the user's cache
    folder (``codecache.cache_folder``) that an earlier process wrote: unzipping and inflating the shipped weights'
    81 arrays is ~8 ms of every start, the copy ~0.5 ms. The copy is named after the archive's CRC-32 and length and
    holds the archive's bytes, compared in full before the copy is used (another archive is never taken for this
    one); missing, unreadable or of another layout, it is written afresh (atomically; an unwritable folder only
    means no copy). None for what ``_plain_npz`` does not read (numpy.load does)."""
    import marshal
    import os
    import zlib

    from .codecache import cache_folder, write_atomically

    try:
        if hasattr(source, "read"):
            data = source.read()
        else:
            with open(source, "rb") as f:
                data = f.read()
    except (OSError, TypeError, ValueError):
        return None
    if not isinstance(data, bytes):
        return None
    path = os.path.join(cache_folder(), f"npz-{zlib.crc32(data):08x}-{len(data)}.bin")
    try:
        with open(path, "rb") as f:
            copy = f.read()
        if zlib.crc32(copy[4:]) == int.from_bytes(copy[:4], "little"):
            layout, archive, flat = marshal.loads(copy[4:])
            if layout == WEIGHTS_CACHE_FORMAT and archive == data:
                return _Arrays((name, np.frombuffer(bytearray(raw), dtype=np.dtype(dtype)).reshape(shape))
                               for name, (dtype, shape, raw) in flat.items())
    except (OSError, ValueError, EOFError, TypeError, KeyError, AttributeError):
        pass  # no copy yet, or a damaged one, or one this version does not read: written afresh below
    import io

    arrays = _plain_npz(io.BytesIO(data))
    if arrays is not None:
        payload = marshal.dumps((WEIGHTS_CACHE_FORMAT, data, {
            name: (array.dtype.str, array.shape, array.tobytes()) for name, array in arrays.items()}))
        write_atomically(path, (zlib.crc32(payload).to_bytes(4, "little"), payload))
    return arrays


# A .npy header as numpy writes it for a C-ordered array of a plain type (numbers, unicode text): anything else is
# read by numpy.load
_NPY_HEADER = re.compile(r"\{'descr': '([<>|=]?(?:[fiub][1248]|U[0-9]+))', 'fortran_order': False, "
                         r"'shape': \(([0-9, ]*)\), \} *\n")
_NPY_MAGIC = b"\x93NUMPY\x01\x00"


class _Arrays(dict):
    """The arrays of an .npz archive by name, with ``files`` (their names) as numpy.load's NpzFile has."""

    @property
    def files(self) -> list[str]:
        return list(self)


def _plain_npz(source) -> _Arrays | None:
    """The arrays of an .npz archive (numpy.savez's zip of .npy files) read without numpy.load, which parses each
    header with ast.literal_eval and reads each member through several file layers: a fifth of a 3-page extract's
    CPU time went to reading the shipped weights (81 arrays). The same arrays, bit for bit (each a writable copy of
    the member's bytes); None for anything but version-1 headers of C-ordered plain-typed arrays (numpy.load reads
    those), and a zip that is not one is left to numpy.load too, whose errors the callers know."""
    import zipfile

    try:
        with zipfile.ZipFile(source) as archive:
            arrays = _Arrays()
            for info in archive.infolist():
                if not info.filename.endswith(".npy"):
                    return None
                data = archive.read(info)
                if not data.startswith(_NPY_MAGIC) or len(data) < 10:
                    return None
                end = 10 + int.from_bytes(data[8:10], "little")
                header = _NPY_HEADER.fullmatch(data[10:end].decode("latin-1"))
                if header is None:
                    return None
                dtype = np.dtype(header[1])
                shape = tuple(int(n) for n in header[2].replace(" ", "").split(",") if n)
                count = int(np.prod(shape, dtype=np.int64))
                if len(data) - end != count * dtype.itemsize:
                    return None
                arrays[info.filename[:-4]] = np.frombuffer(bytearray(data[end:]), dtype=dtype).reshape(shape)
            return arrays
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, RuntimeError):
        return None


def _weights_from(arrays) -> Weights:
    return Weights(line=Network.from_arrays(arrays, "line_"),
                   first=_read_ensemble(arrays, "first"), second=_read_ensemble(arrays, "second"),
                   null_scores=np.asarray(arrays["null_scores"], dtype=np.float64),
                   features=tuple(str(name) for name in arrays["features"]), info=str(arrays["info"]),
                   expert_first=_read_ensemble(arrays, "expert_first"),
                   expert_second=_read_ensemble(arrays, "expert_second"))


def _read_ensemble(arrays, stage: str) -> tuple[Network, ...]:
    count = sum(1 for name in arrays.files if re.fullmatch(rf"{stage}[0-9]+_output_bias", name))
    return tuple(Network.from_arrays(arrays, f"{stage}{number}_") for number in range(count))
