"""MultiHeadAttention and the Transformer layers as Paddle 2.6 writes them (same
sublayers, names and op sequence: projections, reshape/transpose to heads, scaled
q @ k^T + mask, softmax, dropout, @ v, out_proj), composed from existing ops."""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import tensor as M
from ...tensor.generator import shared_doc as _shared_doc
from .. import functional as F
from .common import Dropout, Linear
from .container import LayerList
from .layers import Layer
from .norm import LayerNorm

if TYPE_CHECKING:
    from ...graph.program import Variable

__all__ = ["MultiHeadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]


def _attrs(attr, n):
    """Paddle's _convert_param_attr_to_list: one attr per sublayer (a list), or the same."""
    if isinstance(attr, (list, tuple)):
        if len(attr) != n:
            raise ValueError(f"expected {n} weight/bias attrs, got {len(attr)}")
        return list(attr)
    return [copy.deepcopy(attr) for _ in range(n)]


def _mask(mask, dtype):
    # Paddle's _convert_attention_mask: a bool / int mask (True = attend) becomes 0 / -1e9
    if mask is None or np.dtype(mask.dtype).kind == "f":
        return mask
    return M.scale(M.cast(mask, dtype), 1e9, bias=-1.0, bias_after_scale=False)


# the arguments of the decoder layer and the whole Transformer, documented once
_BLOCK_ARGS = """dim_feedforward (int): the feed-forward width.
        dropout (float): dropout after each block.
        activation (str): a paddle.nn.functional name.
        attn_dropout (float, optional): the attention weights' dropout.
        act_dropout (float, optional): after the activation.
        normalize_before (bool): pre-norm.
        weight_attr (ParamAttr or list, optional): the weights' attrs.
        bias_attr (ParamAttr or list, optional): the biases' attrs."""

# the arguments of an encoder layer's and the encoder's forward, documented once
_ENCODER_ARGS = """src (Variable): [batch, len, d_model].
            src_mask (Variable, optional): the attention mask.
            cache (None): not supported.

        Returns:
            Variable: src's shape."""

# the arguments of a decoder layer's and the decoder's forward, documented once
_DECODER_ARGS = """tgt (Variable): [batch, len_t, d_model].
            memory (Variable): [batch, len_m, d_model].
            tgt_mask (Variable, optional): the self-attention mask.
            memory_mask (Variable, optional): the cross-attention mask.
            cache (None): not supported.

        Returns:
            Variable: tgt's shape."""


class MultiHeadAttention(Layer):
    """Multi-head attention with q_proj, k_proj, v_proj, out_proj (Linear layers).

    Args:
        embed_dim (int): the model width.
        num_heads (int): heads (embed_dim divisible by it).
        dropout (float): dropout of the attention weights in training.
        kdim (int, optional): key width (default embed_dim).
        vdim (int, optional): value width (default embed_dim).
        need_weights (bool): also return the attention weights.
        weight_attr (ParamAttr, optional): the projections' weights.
        bias_attr (ParamAttr or False, optional): the projections' biases.

    Example:
        >>> mha = paddle.nn.MultiHeadAttention(8, 2)
        >>> mha(static.data('q', [None, 5, 8])).shape
        (-1, 5, 8)
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0,
                 kdim: int | None = None, vdim: int | None = None, need_weights: bool = False,
                 weight_attr: Any = None, bias_attr: Any = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(f"MultiHeadAttention: embed_dim ({embed_dim}) must be a positive "
                             f"multiple of num_heads ({num_heads})")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.head_dim, self.dropout, self.need_weights = embed_dim // num_heads, dropout, \
            need_weights
        self.q_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.k_proj = Linear(self.kdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.v_proj = Linear(self.vdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.out_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)

    def _heads(self, proj, x):
        return M.transpose(M.reshape(proj(x), [0, 0, self.num_heads, self.head_dim]),
                           [0, 2, 1, 3])

    def forward(self, query: Variable, key: Variable | None = None,
                value: Variable | None = None, attn_mask: Variable | None = None,
                cache: None = None) -> Any:
        """Attention of query over key / value (default: query).

        Args:
            query (Variable): [batch, len_q, embed_dim].
            key (Variable, optional): [batch, len_k, kdim].
            value (Variable, optional): [batch, len_k, vdim].
            attn_mask (Variable, optional): added to the scores (float), or bool / int
                with True / 1 where attending; broadcast to [batch, heads, len_q, len_k].
            cache (None): incremental decoding caches are not supported.

        Returns:
            Variable: [batch, len_q, embed_dim] (and the weights with need_weights).
        """
        if cache is not None:
            raise NotImplementedError("MultiHeadAttention: cache (incremental decoding) is "
                                      "not supported in numbaflow")
        key = query if key is None else key
        value = query if value is None else value
        q, k, v = (self._heads(self.q_proj, query), self._heads(self.k_proj, key),
                   self._heads(self.v_proj, value))
        product = M.matmul(M.scale(q, self.head_dim ** -0.5), k, transpose_y=True)
        if attn_mask is not None:
            product = product + _mask(attn_mask, product.dtype)
        weights = F.softmax(product)
        if self.dropout:
            weights = F.dropout(weights, self.dropout, training=self.training,
                                mode="upscale_in_train")
        out = M.transpose(M.matmul(weights, v), [0, 2, 1, 3])
        out = self.out_proj(M.reshape(out, [0, 0, self.embed_dim]))
        return (out, weights) if self.need_weights else out


class TransformerEncoderLayer(Layer):
    """Self-attention then a feed-forward block, each with residual, dropout and layer
    norm (post-norm, or pre-norm with normalize_before).

    Args:
        d_model (int): the model width.
        nhead (int): attention heads.
        dim_feedforward (int): the feed-forward width.
        dropout (float): dropout after each block.
        activation (str): a paddle.nn.functional name ('relu', 'gelu').
        attn_dropout (float, optional): the attention weights' dropout (default dropout).
        act_dropout (float, optional): after the activation (default dropout).
        normalize_before (bool): pre-norm.
        weight_attr (ParamAttr or list, optional): the weights' attrs.
        bias_attr (ParamAttr or list, optional): the biases' attrs.
        layer_norm_eps (float): the layer norms' epsilon.

    Example:
        >>> layer = paddle.nn.TransformerEncoderLayer(8, 2, 16)
        >>> layer(static.data('src', [None, 5, 8])).shape
        (-1, 5, 8)
    """

    _n_attn = 1

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float = 0.1,
                 activation: str = "relu", attn_dropout: float | None = None,
                 act_dropout: float | None = None, normalize_before: bool = False,
                 weight_attr: Any = None, bias_attr: Any = None,
                 layer_norm_eps: float = 1e-5) -> None:
        self._config = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        super().__init__()
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = normalize_before
        n = self._n_attn + 1
        ws, bs = _attrs(weight_attr, n), _attrs(bias_attr, n)
        self.self_attn = MultiHeadAttention(d_model, nhead, attn_dropout, weight_attr=ws[0],
                                            bias_attr=bs[0])
        if self._n_attn == 2:
            self.cross_attn = MultiHeadAttention(d_model, nhead, attn_dropout,
                                                 weight_attr=ws[1], bias_attr=bs[1])
        self.linear1 = Linear(d_model, dim_feedforward, ws[-1], bias_attr=bs[-1])
        self.dropout = Dropout(act_dropout, mode="upscale_in_train")
        self.linear2 = Linear(dim_feedforward, d_model, ws[-1], bias_attr=bs[-1])
        for i in range(1, n + 1):
            setattr(self, f"norm{i}", LayerNorm(d_model, layer_norm_eps))
        for i in range(1, n + 1):
            setattr(self, f"dropout{i}", Dropout(dropout, mode="upscale_in_train"))
        if not hasattr(F, activation):
            raise ValueError(f"{type(self).__name__}: activation {activation!r} is not a "
                             f"paddle.nn.functional op")
        self.activation = getattr(F, activation)

    def _block(self, i, x, fn):
        residual = x
        norm = getattr(self, f"norm{i}")
        if self.normalize_before:
            x = norm(x)
        x = residual + getattr(self, f"dropout{i}")(fn(x))
        return x if self.normalize_before else norm(x)

    def _feed_forward(self, x):
        return self.linear2(self.dropout(self.activation(self.linear1(x))))

    @_shared_doc(encoder_args=_ENCODER_ARGS)
    def forward(self, src: Variable, src_mask: Variable | None = None,
                cache: None = None) -> Variable:
        """The encoder layer on src.

        Args:
            {encoder_args}
        """
        src = self._block(1, src, lambda x: self.self_attn(x, x, x, src_mask, cache))
        return self._block(2, src, self._feed_forward)


@_shared_doc(block_args=_BLOCK_ARGS)
class TransformerDecoderLayer(TransformerEncoderLayer):
    """Self-attention, cross-attention over the memory, then a feed-forward block.

    Args:
        d_model (int): the model width.
        nhead (int): attention heads.
        {block_args}
        layer_norm_eps (float): the layer norms' epsilon.

    Example:
        >>> layer = paddle.nn.TransformerDecoderLayer(8, 2, 16)
        >>> tgt, mem = static.data('tgt', [None, 4, 8]), static.data('mem', [None, 6, 8])
        >>> layer(tgt, mem).shape
        (-1, 4, 8)
    """

    _n_attn = 2

    @_shared_doc(decoder_args=_DECODER_ARGS)
    def forward(self, tgt: Variable, memory: Variable, tgt_mask: Variable | None = None,
                memory_mask: Variable | None = None, cache: None = None) -> Variable:
        """The decoder layer on tgt attending to memory.

        Args:
            {decoder_args}
        """
        tgt = self._block(1, tgt, lambda x: self.self_attn(x, x, x, tgt_mask, cache))
        tgt = self._block(2, tgt, lambda x: self.cross_attn(x, memory, memory, memory_mask))
        return self._block(3, tgt, self._feed_forward)


class TransformerEncoder(Layer):
    """`num_layers` copies of an encoder layer (fresh parameters each), then `norm`.

    Args:
        encoder_layer (TransformerEncoderLayer): the first layer; the others are built
            with its arguments.
        num_layers (int): how many.
        norm (LayerNorm, optional): applied to the output.
        enable_recompute (bool): accepted.

    Example:
        >>> enc = paddle.nn.TransformerEncoder(paddle.nn.TransformerEncoderLayer(8, 2, 16), 2)
        >>> enc(static.data('src', [None, 5, 8])).shape
        (-1, 5, 8)
    """

    def __init__(self, encoder_layer: Layer, num_layers: int, norm: Layer | None = None,
                 enable_recompute: bool = False) -> None:
        super().__init__()
        self.layers = LayerList([encoder_layer if i == 0 else
                                 type(encoder_layer)(**encoder_layer._config)
                                 for i in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    @_shared_doc(encoder_args=_ENCODER_ARGS)
    def forward(self, src: Variable, src_mask: Variable | None = None,
                cache: None = None) -> Variable:
        """Each layer in turn, then the norm.

        Args:
            {encoder_args}
        """
        for layer in self.layers:
            src = layer(src, src_mask=src_mask)
        return src if self.norm is None else self.norm(src)


class TransformerDecoder(TransformerEncoder):
    """`num_layers` copies of a decoder layer, then `norm`.

    Args:
        decoder_layer (TransformerDecoderLayer): the first layer.
        num_layers (int): how many.
        norm (LayerNorm, optional): applied to the output.

    Example:
        >>> dec = paddle.nn.TransformerDecoder(paddle.nn.TransformerDecoderLayer(8, 2, 16), 2)
        >>> dec(static.data('t', [None, 4, 8]), static.data('m', [None, 6, 8])).shape
        (-1, 4, 8)
    """

    def __init__(self, decoder_layer: Layer, num_layers: int, norm: Layer | None = None) -> None:
        super().__init__(decoder_layer, num_layers, norm)

    @_shared_doc(decoder_args=_DECODER_ARGS)
    def forward(self, tgt: Variable, memory: Variable, tgt_mask: Variable | None = None,
                memory_mask: Variable | None = None, cache: None = None) -> Variable:
        """Each layer in turn, then the norm.

        Args:
            {decoder_args}
        """
        for layer in self.layers:
            tgt = layer(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask)
        return tgt if self.norm is None else self.norm(tgt)


@_shared_doc(block_args=_BLOCK_ARGS)
class Transformer(Layer):
    """An encoder and a decoder stack, each ending in a LayerNorm, as Paddle's.

    Args:
        d_model (int): the model width.
        nhead (int): attention heads.
        num_encoder_layers (int): encoder depth.
        num_decoder_layers (int): decoder depth.
        {block_args}
        custom_encoder (Layer, optional): used instead of the encoder stack.
        custom_decoder (Layer, optional): used instead of the decoder stack.

    Example:
        >>> model = paddle.nn.Transformer(8, 2, 1, 1, 16)
        >>> model(static.data('src', [None, 5, 8]), static.data('tgt', [None, 4, 8])).shape
        (-1, 4, 8)
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str = "relu",
                 attn_dropout: float | None = None, act_dropout: float | None = None,
                 normalize_before: bool = False, weight_attr: Any = None, bias_attr: Any = None,
                 custom_encoder: Layer | None = None, custom_decoder: Layer | None = None) -> None:
        super().__init__()
        args = (dropout, activation, attn_dropout, act_dropout, normalize_before)
        self.encoder = custom_encoder or TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, dim_feedforward, *args,
                                    weight_attr=weight_attr, bias_attr=bias_attr),
            num_encoder_layers, LayerNorm(d_model))
        self.decoder = custom_decoder or TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, dim_feedforward, *args,
                                    weight_attr=weight_attr, bias_attr=bias_attr),
            num_decoder_layers, LayerNorm(d_model))
        self.d_model, self.nhead = d_model, nhead

    def forward(self, src: Variable, tgt: Variable, src_mask: Variable | None = None,
                tgt_mask: Variable | None = None,
                memory_mask: Variable | None = None) -> Variable:
        """Encode src, decode tgt over it.

        Args:
            src (Variable): [batch, len_s, d_model].
            tgt (Variable): [batch, len_t, d_model].
            src_mask (Variable, optional): the encoder's attention mask.
            tgt_mask (Variable, optional): the decoder's self-attention mask.
            memory_mask (Variable, optional): the cross-attention mask.

        Returns:
            Variable: [batch, len_t, d_model].
        """
        memory = self.encoder(src, src_mask=src_mask)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask)

    def generate_square_subsequent_mask(self, length: int) -> Variable:
        """The causal mask: 0 on and below the diagonal, -inf above (a constant).

        Args:
            length (int): the sequence length.

        Returns:
            Variable: [length, length] float32.
        """
        mask = np.triu(np.full((length, length), -np.inf, "float32"), 1)
        return M.assign(mask)
