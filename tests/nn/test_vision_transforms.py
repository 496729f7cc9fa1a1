"""paddle.vision.transforms' basics on numpy images against numpy written from Paddle 2.6's
documented (cv2-backend) behaviour: ToTensor's HWC uint8 -> CHW float / 255, Normalize's
per-channel (x - mean) / std in CHW and HWC, Resize's half-pixel bilinear and floor-rule
nearest and shorter-side rule, crops and flips with Python's random."""
import random

import numpy as np
import pytest

from numbaflow.vision import transforms as T

RNG = np.random.default_rng(0)
IMG = RNG.integers(0, 256, (6, 8, 3)).astype(np.uint8)


def test_to_tensor_and_normalize_in_both_layouts():
    chw = T.ToTensor()(IMG)
    assert chw.dtype == np.float32 and chw.shape == (3, 6, 8)
    np.testing.assert_allclose(chw, IMG.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    assert T.ToTensor("HWC")(IMG[:, :, 0]).shape == (6, 8, 1)
    mean, std = [0.1, 0.2, 0.3], [0.5, 0.25, 2.0]
    want = (chw - np.array(mean)[:, None, None]) / np.array(std)[:, None, None]
    np.testing.assert_allclose(T.Normalize(mean, std)(chw), want, rtol=1e-5, atol=1e-6)
    hwc = IMG.astype(np.float32)
    np.testing.assert_allclose(T.Normalize(mean, std, "HWC", to_rgb=True)(hwc),
                               (hwc[..., ::-1] - mean) / np.array(std), rtol=1e-5, atol=1e-5)


def _bilinear(img, oh, ow):
    """cv2's INTER_LINEAR from its definition, one output pixel at a time."""
    h, w = img.shape[:2]
    out = np.zeros((oh, ow) + img.shape[2:])
    for y in range(oh):
        for x in range(ow):
            sy = max((y + 0.5) * h / oh - 0.5, 0.0)
            sx = max((x + 0.5) * w / ow - 0.5, 0.0)
            y0, x0 = min(int(sy), h - 1), min(int(sx), w - 1)
            y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
            fy, fx = sy - y0, sx - x0
            out[y, x] = ((1 - fy) * ((1 - fx) * img[y0, x0] + fx * img[y0, x1]) +
                         fy * ((1 - fx) * img[y1, x0] + fx * img[y1, x1]))
    return out


@pytest.mark.parametrize("size", [(4, 5), (9, 13), (6, 8)])
def test_resize_bilinear_and_nearest(size):
    f = IMG.astype(np.float32)
    np.testing.assert_allclose(T.Resize(size)(f), _bilinear(f, *size), rtol=1e-5, atol=1e-4)
    got = T.Resize(size)(IMG)
    assert got.dtype == np.uint8
    np.testing.assert_allclose(got, np.rint(_bilinear(f, *size)), atol=1)
    ys = np.floor(np.arange(size[0]) * 6 / size[0]).astype(int)
    xs = np.floor(np.arange(size[1]) * 8 / size[1]).astype(int)
    np.testing.assert_array_equal(T.Resize(size, "nearest")(IMG), IMG[ys][:, xs])


def test_resize_int_matches_the_shorter_side():
    assert T.Resize(3)(IMG).shape == (3, 4, 3)              # 6x8: h shorter, w = int(3*8/6)
    assert T.Resize(4)(IMG.transpose(1, 0, 2)).shape == (5, 4, 3)
    with pytest.raises(NotImplementedError, match="interpolation 'bicubic'"):
        T.Resize(3, "bicubic")


def test_crops_flip_and_compose():
    np.testing.assert_array_equal(T.CenterCrop((2, 4))(IMG), IMG[2:4, 2:6])
    random.seed(5)
    got = T.RandomCrop(4, padding=1)(IMG)
    random.seed(5)
    i, j = random.randint(0, 8 - 4), random.randint(0, 10 - 4)
    padded = np.pad(IMG, [(1, 1), (1, 1), (0, 0)])
    np.testing.assert_array_equal(got, padded[i:i + 4, j:j + 4])
    assert T.RandomCrop(10, pad_if_needed=True)(IMG).shape == (10, 10, 3)
    with pytest.raises(ValueError, match="smaller than the window"):
        T.RandomCrop(10)(IMG)
    np.testing.assert_array_equal(T.RandomHorizontalFlip(1.0)(IMG), IMG[:, ::-1])
    np.testing.assert_array_equal(T.RandomHorizontalFlip(0.0)(IMG), IMG)
    pipeline = T.Compose([T.CenterCrop(4), T.ToTensor(), T.Normalize(0.5, 0.5)])
    np.testing.assert_allclose(pipeline(IMG), (IMG[1:5, 2:6].transpose(2, 0, 1) / 255 - 0.5)
                               / 0.5, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="expected a numpy image"):
        T.ToTensor()([1, 2, 3])
