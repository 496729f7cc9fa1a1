"""Data-parallel feed splitting, loss-gradient scales and fetch merging (SPEC §6).

Pure numpy functions with no executor state, so the data-parallel runner stays small and
every rule here is testable on its own:

- `split_sizes(B, D)`: chunk sizes that differ by at most one, the first ones larger.
- `split_feed(block, feed, D, training)`: one checked feed dict per device (views of the
  user's arrays) and the per-device batch sizes.
- `loss_grad_scales(sizes, global_batch, strategy)`: each device's `loss@GRAD` value.
- `merge_fetch(per_device, return_merged)`: the values `Executor.run` returns.
"""
import numpy as np

from ..graph.program import Variable
from ..executor.feed import check_feed, feed_array, feed_var
from .modes import GradientScaleStrategy


def split_sizes(batch, num_devices):
    """Sizes of `num_devices` contiguous chunks of `batch` rows: they differ by at most
    one and the first chunks are the larger (Paddle's ceil split rejects B=5 on 4 devices;
    this one never does). With `batch < num_devices` the last chunks are 0.

    >>> split_sizes(3, 2)
    [2, 1]
    >>> split_sizes(5, 4)
    [2, 1, 1, 1]
    >>> split_sizes(7, 4)
    [2, 2, 2, 1]
    """
    if int(num_devices) < 1:
        raise ValueError(f"split_sizes: the device count must be at least 1, got {num_devices}")
    if int(batch) < 0:
        raise ValueError(f"split_sizes: the batch size must be >= 0, got {batch}")
    q, r = divmod(int(batch), int(num_devices))
    return [q + 1] * r + [q] * (int(num_devices) - r)


def split_feed(block, feed, num_devices, training, loss_grad_name=None, check=True):
    """Split one run's feed over `num_devices` local devices.

    Returns `(feeds, batch_sizes)`: `feeds` is a list of per-device `{name: ndarray}` dicts,
    each checked by `executor.check_feed` (C-contiguous; slices of C-contiguous inputs are
    views, not copies; `check=False`: a dict feed's are not checked, e.g. because each
    device's plan cache repeat check accepts them), and `batch_sizes[i]` is device i's
    number of samples.

    `len(feeds)` may be *smaller* than `num_devices`: an inference/test program
    (`training=False`) fed fewer samples than devices runs only on the first B devices, one
    sample each, and the runner must run (and merge the fetches of) only those devices.
    A feed with no batch (None, {}, or only persistables/0-D values) gives every device
    batch size 1, so `loss_grad_scales` yields the even split 1/(R*D).

    - dict feed: each non-persistable variable is split along axis 0 into contiguous chunks
      of `split_sizes(B, D)` rows; all such variables must have the same B. B == 0, or
      B < D in a training program, raise ValueError. A persistable variable (e.g.
      `learning_rate_0`) or a 0-D value is the same array on every device.
    - list feed: one dict per device (the length must be D), each checked as is.
    - `loss_grad_name`: the `<loss>@GRAD` variable under GradientScaleStrategy.Customized;
      it must then be fed, with shape (D,) or (D, 1) in a dict feed (device i gets element
      i, reshaped to the variable's shape) or one value per dict in a list feed.

    >>> feeds, sizes = split_feed(block, {'X': np.zeros((5, 1), 'float32')}, 4, True)
    >>> sizes, [f['X'].shape for f in feeds]
    ([2, 1, 1, 1], [(2, 1), (1, 1), (1, 1), (1, 1)])
    """
    num_devices = int(num_devices)
    if num_devices < 1:
        raise ValueError(f"split_feed: the device count must be at least 1, got {num_devices}")
    if isinstance(feed, (list, tuple)):
        return _split_list_feed(block, feed, num_devices, loss_grad_name)
    if feed is None:
        feed = {}
    if not isinstance(feed, dict):
        raise TypeError(f"feed must be a dict {{name: array}} (split across the devices) or "
                        f"a list of one such dict per device, got {type(feed).__name__}")
    arrays = {}
    for key, value in feed.items():
        name = key.name if isinstance(key, Variable) else key
        arrays[name] = _to_array(block, name, value)
    _require_loss_grad(arrays, loss_grad_name, num_devices)

    batched = {n: a for n, a in arrays.items()
               if n != loss_grad_name and not block.vars[n].persistable and a.ndim > 0}
    batch = _common_batch(batched, num_devices)
    if batch is None:
        sizes = [1] * num_devices
    elif batch == 0:
        names = ", ".join(repr(n) for n in batched)
        raise ValueError(f"The fed variable(s) {names} have a batch of 0 samples; feed at "
                         f"least {num_devices if training else 1} sample(s) "
                         f"({'one per device, ' if training else ''}{num_devices} devices)")
    elif batch < num_devices and training:
        names = ", ".join(repr(n) for n in batched)
        raise ValueError(
            f"The batch size {batch} (fed variable(s) {names}) is smaller than the device "
            f"count {num_devices}: every device of a training program needs at least one "
            f"sample. Feed at least {num_devices} samples per run, drop the last incomplete "
            f"batch (DataLoader drop_last=True), or use fewer places.")
    else:
        sizes = [s for s in split_sizes(batch, num_devices) if s > 0]

    feeds = [{} for _ in sizes]
    for name, arr in arrays.items():
        if name == loss_grad_name:
            shape = block.vars[name].shape
            for i, f in enumerate(feeds):
                f[name] = arr.reshape(-1)[i].reshape(shape)
        elif name in batched:
            start = 0
            for f, s in zip(feeds, sizes):
                f[name] = arr[start:start + s]
                start += s
        else:
            for f in feeds:
                f[name] = arr
    return (_check_each(block, feeds, sizes, batch) if check else feeds), sizes


def _to_array(block, name, value):
    """The fed value as an ndarray, converted as check_feed converts it (the same rules);
    the shape is checked later, per device, so errors quote the per-device shape."""
    return feed_array(feed_var(block, name), value)


def _require_loss_grad(arrays, loss_grad_name, num_devices):
    if loss_grad_name is None:
        return
    arr = arrays.get(loss_grad_name)
    expected = f"({num_devices},) or ({num_devices}, 1)"
    if arr is None:
        raise ValueError(f"GradientScaleStrategy.Customized: feed {loss_grad_name!r} with "
                         f"shape {expected}, one loss-gradient value per device (e.g. "
                         f"{[round(1 / num_devices, 4)] * num_devices} to average)")
    ok = arr.shape in ((num_devices,), (num_devices, 1)) or (num_devices == 1 and arr.size == 1)
    if not ok:
        raise ValueError(f"GradientScaleStrategy.Customized: {loss_grad_name!r} must be fed "
                         f"with shape {expected} (one value per device, expected shape "
                         f"({num_devices},)), but received shape {tuple(arr.shape)}")


def _common_batch(batched, num_devices):
    """The one batch size shared by every split variable (None when there are none)."""
    rows = {n: a.shape[0] for n, a in batched.items()}
    if len(set(rows.values())) > 1:
        listing = ", ".join(f"{n!r}: {b}" for n, b in rows.items())
        raise ValueError(f"The fed variables have different batch sizes ({listing}); each "
                         f"non-persistable fed variable is split along axis 0 over the "
                         f"{num_devices} devices, so all must have the same number of rows "
                         f"(or feed a list of one dict per device)")
    return next(iter(rows.values()), None)


def _check_each(block, feeds, sizes, batch):
    """check_feed on every device's dict; shape errors say the shape is per device."""
    out = []
    for i, f in enumerate(feeds):
        try:
            out.append(check_feed(block, f))
        except ValueError as e:
            raise ValueError(_per_device_message(str(e), f, i, sizes, batch)) from None
    return out


def _per_device_message(msg, feed, i, sizes, batch):
    where = "on each device" if len(set(sizes)) == 1 else f"on device {i}"
    if batch is not None:
        where += f" (the batch of {batch} is split over {len(sizes)} devices as {sizes})"
    for arr in feed.values():
        marker = f"received fed shape {tuple(arr.shape)}"
        if marker in msg:
            return msg.replace(marker, f"{marker} {where}", 1)
    return msg      # not about the shape (e.g. the dtype): the same on every device


def _split_list_feed(block, feeds, num_devices, loss_grad_name):
    if len(feeds) != num_devices:
        raise ValueError(
            f"The feed data number {len(feeds)} does not match the device number "
            f"{num_devices}. A list feed needs one dict per device ({num_devices} dicts); "
            f"feed a single dict to have the batch split across the devices, or, with a "
            f"DataLoader, set drop_last=True or give it the same places.")
    out, sizes = [], []
    for i, f in enumerate(feeds):
        if not isinstance(f, dict):
            raise TypeError(f"A list feed must hold one dict per device; item {i} is a "
                            f"{type(f).__name__}")
        f = {(k.name if isinstance(k, Variable) else k): v for k, v in f.items()}
        if loss_grad_name is not None:
            if loss_grad_name not in f:
                raise ValueError(f"GradientScaleStrategy.Customized: feed {loss_grad_name!r} "
                                 f"in every dict of the list feed (missing on device {i})")
            value = _to_array(block, loss_grad_name, f[loss_grad_name])
            var = block.vars[loss_grad_name]
            if value.size == 1:     # [0.5] or 0.5 for a 0-D loss gradient
                f[loss_grad_name] = value.reshape(var.shape)
        try:
            checked = check_feed(block, f)
        except ValueError as e:
            raise ValueError(f"{e} [in the feed dict of device {i}]") from None
        batched = {n: a for n, a in checked.items()
                   if n != loss_grad_name and not block.vars[n].persistable and a.ndim > 0}
        try:
            b = _common_batch(batched, num_devices)
        except ValueError as e:
            raise ValueError(f"{e} [in the feed dict of device {i}]") from None
        out.append(checked)
        sizes.append(1 if b is None else b)
    return out, sizes


def loss_grad_scales(batch_sizes, global_batch, strategy):
    """Each local device's `loss@GRAD` value (Python floats; cast to the grad's dtype).

    CoeffNumDevice: `b_i / global_batch`, the device's share of the batch summed over all
    devices and ranks, so a data-parallel step equals one step on the whole batch for
    every split. One: 1.0 per device. Customized: None (the user feeds it; see split_feed).

    >>> loss_grad_scales([2, 1, 1, 1], 5, GradientScaleStrategy.CoeffNumDevice)
    [0.4, 0.2, 0.2, 0.2]
    >>> loss_grad_scales([5, 5], 10, GradientScaleStrategy.One)
    [1.0, 1.0]
    """
    if strategy == GradientScaleStrategy.Customized:
        return None
    if strategy == GradientScaleStrategy.One:
        return [1.0] * len(batch_sizes)
    if strategy != GradientScaleStrategy.CoeffNumDevice:
        raise TypeError(f"loss_grad_scales: strategy must be a GradientScaleStrategy, got "
                        f"{strategy!r}")
    if global_batch <= 0 or global_batch < sum(batch_sizes):
        raise ValueError(f"loss_grad_scales: global_batch {global_batch} must be positive and "
                         f"at least the local batch {sum(batch_sizes)} (sizes {batch_sizes})")
    return [b / global_batch for b in batch_sizes]


def merge_fetch(per_device, return_merged=True):
    """Combine `per_device[device][fetch]` arrays into what `Executor.run` returns.

    Merged: per fetch, the devices' arrays concatenated along axis 0 in device order
    (a parameter `[a, b]` gives `(D*a, b)`); 0-D values stack to shape `(D,)`. Arrays whose
    trailing dimensions differ between devices raise ValueError (fetch them with
    return_merged=False). Unmerged: a list per fetch of the D per-device arrays.

    >>> merge_fetch([[np.float32(1)], [np.float32(2)]], True)[0]
    array([1., 2.], dtype=float32)
    """
    if not per_device:
        raise ValueError("merge_fetch: no device results to merge")
    n = len(per_device[0])
    if any(len(r) != n for r in per_device):
        raise ValueError(f"merge_fetch: devices returned different numbers of fetches "
                         f"{[len(r) for r in per_device]}")
    columns = [[np.asarray(r[j]) for r in per_device] for j in range(n)]
    if not return_merged:
        return columns
    return [_merge_one(j, col) for j, col in enumerate(columns)]


def _merge_one(j, arrays):
    if all(a.ndim == 0 for a in arrays):
        return np.stack(arrays)
    tails = [a.shape[1:] if a.ndim else None for a in arrays]
    if any(t != tails[0] for t in tails):
        raise ValueError(f"Cannot merge fetch #{j}: the per-device shapes "
                         f"{[tuple(a.shape) for a in arrays]} differ after axis 0, so they "
                         f"cannot be concatenated; run with return_merged=False to get one "
                         f"array per device")
    return np.concatenate(arrays, axis=0)
