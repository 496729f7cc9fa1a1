"""paddle.vision.transforms' basics for numpy images, with Paddle 2.6's numpy (cv2-backend)
semantics: images are HWC arrays (H, W or H, W, C) until ToTensor makes a float32 CHW array
(numbaflow has no eager tensors: transforms feed `Executor.run`, so arrays are what a
static-graph program is fed). Random choices use Python's `random`, as Paddle's.

>>> import numpy as np
>>> from numbaflow.vision import transforms as T
>>> t = T.Compose([T.Resize(4), T.ToTensor(), T.Normalize([0.5] * 3, [0.5] * 3)])
>>> t(np.zeros((8, 6, 3), np.uint8)).shape
(3, 5, 4)
"""
from __future__ import annotations

import numbers
import random
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["Compose", "ToTensor", "Normalize", "Resize", "RandomCrop", "CenterCrop",
           "RandomHorizontalFlip", "Transpose"]


def _image(img, what):
    if not isinstance(img, np.ndarray) or img.ndim not in (2, 3):
        raise TypeError(f"{what}: expected a numpy image (H, W) or (H, W, C), got "
                        f"{getattr(img, 'shape', type(img).__name__)}")
    return img


def _pair(size, what):
    if isinstance(size, numbers.Integral):
        return int(size), int(size)
    if isinstance(size, (list, tuple)) and len(size) == 2:
        return int(size[0]), int(size[1])
    raise ValueError(f"{what}: size must be an int or (h, w), got {size!r}")


class Compose:
    """Apply `transforms` in order.

    Args:
        transforms (list): callables, each image -> image.

    Example:
        >>> T = paddle.vision.transforms
        >>> T.Compose([T.Transpose()])(np.zeros((2, 3, 1))).shape
        (1, 2, 3)
    """

    def __init__(self, transforms: Sequence[Callable]) -> None:
        self.transforms = list(transforms)

    def __call__(self, img: Any) -> Any:
        """The image after every transform."""
        for t in self.transforms:
            img = t(img)
        return img


class ToTensor:
    """HWC image to a float32 array in `data_format` ('CHW' default); uint8 values are
    divided by 255 (Paddle's to_tensor; a 2-D image gets one channel).

    Args:
        data_format (str): 'CHW' or 'HWC'.

    Example:
        >>> paddle.vision.transforms.ToTensor()(np.full((2, 2, 3), 255, np.uint8))[:, 0, 0]
        array([1., 1., 1.], dtype=float32)
    """

    def __init__(self, data_format: str = "CHW", keys: Any = None) -> None:
        if data_format not in ("CHW", "HWC"):
            raise ValueError(f"ToTensor: data_format must be 'CHW' or 'HWC', got {data_format!r}")
        self.data_format = data_format

    def __call__(self, img: np.ndarray) -> np.ndarray:
        """The converted image."""
        img = _image(img, "ToTensor")
        out = img[:, :, None] if img.ndim == 2 else img
        scale = 255.0 if out.dtype == np.uint8 else 1.0
        out = out.astype(np.float32) / np.float32(scale)
        return np.ascontiguousarray(out.transpose(2, 0, 1) if self.data_format == "CHW" else out)


class Normalize:
    """(img - mean) / std per channel, in float32; `to_rgb` reverses the last axis first
    (Paddle's numpy normalize).

    Args:
        mean (float or list): per-channel means.
        std (float or list): per-channel standard deviations.
        data_format (str): 'CHW' (channels first) or 'HWC'.
        to_rgb (bool): BGR -> RGB first.

    Example:
        >>> norm = paddle.vision.transforms.Normalize(127.5, 127.5, data_format='HWC')
        >>> norm(np.full((1, 1, 3), 255.0))[0, 0]
        array([1., 1., 1.], dtype=float32)
    """

    def __init__(self, mean: float | Sequence[float] = 0.0, std: float | Sequence[float] = 1.0,
                 data_format: str = "CHW", to_rgb: bool = False, keys: Any = None) -> None:
        if data_format not in ("CHW", "HWC"):
            raise ValueError(f"Normalize: data_format must be 'CHW' or 'HWC', got "
                             f"{data_format!r}")
        shape = (-1, 1, 1) if data_format == "CHW" else (1, 1, -1)
        self.mean = np.float32(np.array(mean, dtype=np.float64).reshape(shape))
        self.std = np.float32(np.array(std, dtype=np.float64).reshape(shape))
        self.to_rgb = to_rgb

    def __call__(self, img: np.ndarray) -> np.ndarray:
        """The normalised image."""
        img = _image(img, "Normalize")
        if self.to_rgb:
            img = img[..., ::-1]
        return ((img - self.mean) / self.std).astype(np.float32)


def _resize_axis(n_in, n_out, mode):
    """Source indices (and bilinear weights) of cv2.resize along one axis: half-pixel
    centres for bilinear, floor(dst * in / out) for nearest."""
    scale = n_in / n_out
    if mode == "nearest":
        return np.minimum(np.floor(np.arange(n_out) * scale).astype(int), n_in - 1), None, None
    src = np.maximum((np.arange(n_out) + 0.5) * scale - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(int), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    return lo, hi, (src - lo).astype(np.float32)


class Resize:
    """Resize an HWC image to `size` (h, w), or, for an int, its shorter side to `size`
    keeping the aspect ratio (the longer side int(size * long / short)); 'bilinear'
    (half-pixel centres, as cv2) or 'nearest' (cv2's floor rule). No antialiasing.

    Args:
        size (int or (h, w)): the output size.
        interpolation (str): 'bilinear' or 'nearest'.

    Example:
        >>> paddle.vision.transforms.Resize((2, 3), 'nearest')(np.arange(16).reshape(4, 4))
        array([[ 0,  1,  2],
               [ 8,  9, 10]])
    """

    def __init__(self, size: int | Sequence[int], interpolation: str = "bilinear",
                 keys: Any = None) -> None:
        if interpolation not in ("bilinear", "nearest"):
            raise NotImplementedError(f"Resize: interpolation {interpolation!r} is not "
                                      f"supported; use 'bilinear' or 'nearest'")
        if not isinstance(size, numbers.Integral):
            _pair(size, "Resize")
        self.size, self.interpolation = size, interpolation

    def __call__(self, img: np.ndarray) -> np.ndarray:
        """The resized image (its dtype kept; integers rounded)."""
        img = _image(img, "Resize")
        h, w = img.shape[:2]
        if isinstance(self.size, numbers.Integral):
            s = int(self.size)
            oh, ow = (int(s * h / w), s) if w < h else (s, int(s * w / h))
        else:
            oh, ow = _pair(self.size, "Resize")
        ys, ys1, wy = _resize_axis(h, oh, self.interpolation)
        xs, xs1, wx = _resize_axis(w, ow, self.interpolation)
        if self.interpolation == "nearest":
            return img[ys][:, xs]
        f = img.astype(np.float32)
        wy = wy.reshape((-1, 1) + (1,) * (img.ndim - 2))
        wx = wx.reshape((1, -1) + (1,) * (img.ndim - 2))
        top = f[ys][:, xs] * (1 - wx) + f[ys][:, xs1] * wx
        bottom = f[ys1][:, xs] * (1 - wx) + f[ys1][:, xs1] * wx
        out = top * (1 - wy) + bottom * wy
        if np.issubdtype(img.dtype, np.integer):
            info = np.iinfo(img.dtype)
            out = np.clip(np.rint(out), info.min, info.max)
        return out.astype(img.dtype)


class CenterCrop:
    """The centre (h, w) window of an HWC image (top = round((H - h) / 2), as Paddle).

    Args:
        size (int or (h, w)): the window.

    Example:
        >>> paddle.vision.transforms.CenterCrop(2)(np.arange(16).reshape(4, 4))
        array([[ 5,  6],
               [ 9, 10]])
    """

    def __init__(self, size: int | Sequence[int], keys: Any = None) -> None:
        self.size = _pair(size, "CenterCrop")

    def __call__(self, img: np.ndarray) -> np.ndarray:
        """The cropped image."""
        img = _image(img, "CenterCrop")
        (h, w), (th, tw) = img.shape[:2], self.size
        i, j = int(round((h - th) / 2.0)), int(round((w - tw) / 2.0))
        return img[i:i + th, j:j + tw]


class RandomCrop:
    """A random (h, w) window of an HWC image, after optional constant `padding` (an int
    or (left/right, top/bottom) or (left, top, right, bottom)); top and left come from
    random.randint as Paddle's.

    Args:
        size (int or (h, w)): the window.
        padding (int or list, optional): constant padding first.
        pad_if_needed (bool): pad an image smaller than the window.
        fill (float): the padding value.
        padding_mode (str): 'constant' only.

    Example:
        >>> paddle.vision.transforms.RandomCrop(2, padding=1)(np.ones((3, 3, 1))).shape
        (2, 2, 1)
    """

    def __init__(self, size: int | Sequence[int], padding: int | Sequence[int] | None = None,
                 pad_if_needed: bool = False, fill: float = 0, padding_mode: str = "constant",
                 keys: Any = None) -> None:
        if padding_mode != "constant":
            raise NotImplementedError(f"RandomCrop: padding_mode {padding_mode!r} is not "
                                      f"supported; use 'constant'")
        self.size, self.padding = _pair(size, "RandomCrop"), padding
        self.pad_if_needed, self.fill = pad_if_needed, fill

    def _pad(self, img, left, top, right, bottom):
        widths = [(top, bottom), (left, right)] + [(0, 0)] * (img.ndim - 2)
        return np.pad(img, widths, constant_values=self.fill)

    def __call__(self, img: np.ndarray) -> np.ndarray:
        """The cropped image."""
        img = _image(img, "RandomCrop")
        p = self.padding
        if p is not None:
            p = [p] * 4 if isinstance(p, numbers.Integral) else list(p)
            p = p * 2 if len(p) == 2 else p
            img = self._pad(img, *p)
        th, tw = self.size
        h, w = img.shape[:2]
        if self.pad_if_needed and (w < tw or h < th):
            img = self._pad(img, max(tw - w, 0), max(th - h, 0), max(tw - w, 0),
                            max(th - h, 0))
            h, w = img.shape[:2]
        if h < th or w < tw:
            raise ValueError(f"RandomCrop: the image ({h}, {w}) is smaller than the window "
                             f"({th}, {tw}); pass pad_if_needed=True or padding")
        i, j = random.randint(0, h - th), random.randint(0, w - tw)
        return img[i:i + th, j:j + tw]


class RandomHorizontalFlip:
    """Mirror an HWC image left-right with probability `prob` (random.random() < prob).

    Args:
        prob (float): the flip probability.

    Example:
        >>> paddle.vision.transforms.RandomHorizontalFlip(1.0)(np.array([[1, 2, 3]]))
        array([[3, 2, 1]])
    """

    def __init__(self, prob: float = 0.5, keys: Any = None) -> None:
        self.prob = prob

    def __call__(self, img: np.ndarray) -> np.ndarray:
        """The image, flipped or not."""
        img = _image(img, "RandomHorizontalFlip")
        return img[:, ::-1] if random.random() < self.prob else img


class Transpose:
    """Permute an image's axes (default HWC -> CHW; a 2-D image gets one channel first).

    Args:
        order (tuple): the new axis order.

    Example:
        >>> paddle.vision.transforms.Transpose()(np.zeros((4, 5, 3))).shape
        (3, 4, 5)
    """

    def __init__(self, order: Sequence[int] = (2, 0, 1), keys: Any = None) -> None:
        self.order = tuple(order)

    def __call__(self, img: np.ndarray) -> np.ndarray:
        """The transposed image."""
        img = _image(img, "Transpose")
        return np.transpose(img[:, :, None] if img.ndim == 2 else img, self.order)
