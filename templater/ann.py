"""A one-hidden-layer neural network in numpy: standardised inputs, tanh hidden units, a sigmoid output.

The founding notes trained their line classifier with FANN; this is the same shape of network without the
dependency. Training is full-batch Adam on weighted cross-entropy from a fixed seed, so the same data and
settings give the same weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


LEARNING_RATE = 0.01
ADAM_BETAS = (0.9, 0.999)
ADAM_EPSILON = 1e-8
L2_PENALTY = 1e-4  # weight decay on the two weight matrices
INIT_SCALE = 1.0  # hidden weights start as normal(0, INIT_SCALE / sqrt(inputs))
MIN_STD = 1e-6  # an input whose spread is below this is only centred, not scaled


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

    Members trained on the same inputs share their standardisation: they run as one network, their hidden layers
    side by side (one matrix product per layer for the whole ensemble; the numbers are those of each member's own
    forward pass but for the order in which a matrix product adds, last bits at most)."""
    packed = _packed(networks) if len(inputs) else None
    if packed is None:
        return np.mean([predict(network, inputs) for network in networks], axis=0)
    mean, std, hidden_weights, hidden_bias, output_weights, output_bias = packed
    scaled = inputs - mean
    scaled /= std
    hidden = scaled @ hidden_weights
    hidden += hidden_bias
    np.tanh(hidden, out=hidden)
    output = hidden @ output_weights
    output += output_bias
    return _sigmoid_in_place(output).mean(axis=1)


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


_PACKED: dict[int, tuple[object, tuple | None]] = {}


def _packed(networks) -> tuple | None:
    """An ensemble as one network (remembered per ensemble object, as _shared_scaling does): the shared mean and
    std, the members' hidden weights side by side (inputs x all hidden units) and hidden biases, their output
    weights as a block-diagonal (all hidden units x members) matrix and their output biases; None when the members
    do not share their standardisation."""
    known = _PACKED.get(id(networks))
    if known is None or known[0] is not networks:
        known = _PACKED[id(networks)] = (networks, _pack(networks))
    return known[1]


def _pack(networks) -> tuple | None:
    if not len(networks) or not (len(networks) == 1 or _shared_scaling(networks)):
        return None
    sizes = [len(n.hidden_bias) for n in networks]
    output_weights = np.zeros((sum(sizes), len(networks)))
    start = 0
    for member, (network, size) in enumerate(zip(networks, sizes)):
        output_weights[start:start + size, member] = network.output_weights
        start += size
    return (networks[0].mean, networks[0].std, np.hstack([n.hidden_weights for n in networks]),
            np.concatenate([n.hidden_bias for n in networks]), output_weights,
            np.array([float(n.output_bias) for n in networks]))


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
    """

    line: Network
    first: tuple[Network, ...]
    second: tuple[Network, ...]
    null_scores: np.ndarray  # sorted ascending
    features: tuple[str, ...]  # the block feature names the networks were trained on, in column order
    info: str = "{}"  # JSON: how the weights were made (seed, sizes, pages)


def save_weights(weights: Weights, target) -> None:
    """Write weights to a path or binary file object as one compressed .npz archive."""
    arrays = weights.line.to_arrays("line_")
    for stage, networks in (("first", weights.first), ("second", weights.second)):
        for number, network in enumerate(networks):
            arrays.update(network.to_arrays(f"{stage}{number}_"))
    arrays["null_scores"] = weights.null_scores
    arrays["features"] = np.array(weights.features)
    arrays["info"] = np.array(weights.info)
    np.savez_compressed(target, **arrays)


def read_weights(source) -> Weights:
    """Read weights written by save_weights from a path or binary file object."""
    with np.load(source, allow_pickle=False) as arrays:
        return Weights(line=Network.from_arrays(arrays, "line_"),
                       first=_read_ensemble(arrays, "first"), second=_read_ensemble(arrays, "second"),
                       null_scores=np.asarray(arrays["null_scores"], dtype=np.float64),
                       features=tuple(str(name) for name in arrays["features"]), info=str(arrays["info"]))


def _read_ensemble(arrays, stage: str) -> tuple[Network, ...]:
    count = sum(1 for name in arrays.files if name.startswith(stage) and name.endswith("_output_bias"))
    return tuple(Network.from_arrays(arrays, f"{stage}{number}_") for number in range(count))
