#!/usr/bin/env python3
"""Exports the small PyTorch models that ckopt's ONNX tests import, with
onnxruntime's outputs, to test/onnx/models/<name>/:

  model.onnx     torch.onnx.export of the model in eval mode
  input_0.pb     a seeded random input (TensorProto)
  output_0.pb    onnxruntime's output for it (the reference, not ckopt's)

Models (a few KB each; the batch dimension is dynamic, so the import needs
--batch): `mlp` (Linear-ReLU-Linear-Tanh-Linear), `cnn` (conv stem with BatchNorm,
two residual blocks, max pool, global average pool, linear classifier),
`transformer` (nn.TransformerEncoder: 2 layers, d_model 8, 2 heads, GELU
feed-forward, LayerNorm; then mean over the sequence and a linear head),
`mbv3` (a MobileNetV3-style inverted residual block as timm builds it:
1x1 expand + BatchNorm + HardSwish, depthwise 3x3 conv (group = channels)
+ BatchNorm + HardSwish, squeeze-excite with ReLU and HardSigmoid, 1x1
project + BatchNorm, residual; then a grouped (group 2) 3x3 conv with
stride 2, global average pool and a linear head).

`gpt_ts` and `gpt_dynamo`: a small GPT (token and position embeddings,
2 pre-norm decoder blocks with causal self-attention (a tril mask buffer and
masked_fill with -inf) and a GELU MLP, final LayerNorm, untied head;
vocab 32, 8 positions, width 16, 2 heads) exported by both of PyTorch's
exporters: TorchScript (`dynamo=False`, opset 17) and torch.export
(`dynamo=True`, its default opset), input `ids` int64 [2, 8], output the
logits [2, 8, 32]. `gpt_loss_ts` and `gpt_loss_dynamo`: the same weights
with `F.cross_entropy` over the flattened logits against int64 `labels`
[2, 8] (one of them -100, PyTorch's ignore_index) in the graph, output the
rank-0 loss (both exporters write SoftmaxCrossEntropyLoss). Their shapes are
static (batch 2).

`export_models.py NAME...` exports only the named models (the others'
committed fixtures stay as they are).

Needs torch, onnx, onnxruntime (scripts/onnx-env.sh --torch). Run from the
repository root: ~/.cache/ckopt/onnx-venv/bin/python test/onnx/export_models.py
"""
import math
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper
from torch import nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
OPSET = 17


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(6, 12), nn.Linear(12, 12), nn.Linear(12, 3)

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(torch.relu(self.fc1(x)))))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem, self.bn = nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4)
        self.block1, self.block2 = Block(4), Block(4)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(4, 5)

    def forward(self, x):
        x = torch.relu(self.bn(self.stem(x)))
        x = self.pool(self.block1(x))
        x = self.block2(x)
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.1,
                                           activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.encoder(x).mean(dim=1))


class Mbv3Block(nn.Module):
    def __init__(self, c=4, e=8, se=4):
        super().__init__()
        self.expand, self.bn1 = nn.Conv2d(c, e, 1, bias=False), nn.BatchNorm2d(e)
        self.conv, self.bn2 = nn.Conv2d(e, e, 3, padding=1, groups=e, bias=False), nn.BatchNorm2d(e)
        self.se_reduce, self.se_expand = nn.Conv2d(e, se, 1), nn.Conv2d(se, e, 1)
        self.project, self.bn3 = nn.Conv2d(e, c, 1, bias=False), nn.BatchNorm2d(c)
        self.act, self.gate = nn.Hardswish(), nn.Hardsigmoid()

    def forward(self, x):
        y = self.act(self.bn1(self.expand(x)))
        y = self.act(self.bn2(self.conv(y)))
        s = nn.functional.adaptive_avg_pool2d(y, 1)
        y = y * self.gate(self.se_expand(torch.relu(self.se_reduce(s))))
        return x + self.bn3(self.project(y))


class Mbv3(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem, self.bn, self.act = nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.Hardswish()
        self.block = Mbv3Block()
        self.down = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)
        self.head = nn.Linear(6, 5)

    def forward(self, x):
        x = self.down(self.block(self.act(self.bn(self.stem(x)))))
        return self.head(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))


class GptBlock(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        b, t, c = x.shape
        hd = c // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        y = torch.softmax(att, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self, vocab=32, seq=8, d=16, heads=2, depth=2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList([GptBlock(d, heads, seq) for _ in range(depth)])
        self.lnf, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        pos = torch.arange(0, ids.shape[1], dtype=torch.long, device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.lnf(x))


class GptLoss(nn.Module):
    def __init__(self, gpt):
        super().__init__()
        self.gpt = gpt

    def forward(self, ids, labels):
        logits = self.gpt(ids)
        return nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))


def export_gpt(name, model, args, input_names, output_name, dynamo):
    """A GPT model (static shapes, integer inputs) and onnxruntime's output."""
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    model.eval()
    kw = {} if dynamo else {"opset_version": OPSET}
    torch.onnx.export(model, args, path, input_names=input_names, output_names=[output_name], dynamo=dynamo,
                      external_data=False, **kw)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {n: a.numpy() for n, a in zip(input_names, args)}
    (y,) = sess.run(None, feeds)
    for i, (n, a) in enumerate(zip(input_names, args)):
        with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a.numpy(), n).SerializeToString())
    with open(os.path.join(d, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(np.asarray(y, dtype=np.float32), output_name).SerializeToString())
    ops = sorted({n.op_type for n in m.graph.node})
    opset = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]
    print(f"{name}: {os.path.getsize(path)} bytes, opset {opset}, ops {ops}")


def randomize_bn(model, gen):
    # Non-trivial running statistics, so the import must use the file's values.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)


def export(name, model, x, dynamic_batch=False, fold=True):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    model.eval()
    kw = {}
    if dynamic_batch:
        kw["dynamic_axes"] = {"x": {0: "batch"}, "y": {0: "batch"}}
    torch.onnx.export(model, (x,), path, input_names=["x"], output_names=["y"], opset_version=OPSET,
                      dynamo=False, do_constant_folding=fold, **kw)
    onnx.checker.check_model(onnx.load(path))
    x = x.detach()
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": x.numpy()})
    with open(os.path.join(d, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x.numpy(), "x").SerializeToString())
    with open(os.path.join(d, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(np.asarray(y, dtype=np.float32), "y").SerializeToString())
    ops = sorted({n.op_type for n in onnx.load(path).graph.node})
    print(f"{name}: {os.path.getsize(path)} bytes, ops {ops}")


def main(names):
    want = lambda n: not names or n in names
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    # Every model is built (and the generator advanced) in the same order
    # whichever are exported, so each fixture's weights and inputs do not
    # depend on the selection.
    mlp, x = Mlp(), torch.randn(4, 6, generator=gen)
    if want("mlp"):
        export("mlp", mlp, x, dynamic_batch=True)
    cnn = Cnn()
    with torch.no_grad():
        randomize_bn(cnn, gen)
    x = torch.randn(2, 3, 8, 8, generator=gen)
    # Without constant folding the exporter keeps BatchNormalization nodes
    # (folding would merge them into the convolutions).
    if want("cnn"):
        export("cnn", cnn, x, dynamic_batch=True, fold=False)
    enc, x = Encoder(), torch.randn(2, 5, 8, generator=gen)
    if want("transformer"):
        export("transformer", enc, x, dynamic_batch=True)
    mbv3 = Mbv3()
    with torch.no_grad():
        randomize_bn(mbv3, gen)
    x = torch.randn(2, 3, 6, 6, generator=gen) * 2.0  # wide enough to reach both HardSwish corners
    if want("mbv3"):
        export("mbv3", mbv3, x, dynamic_batch=True, fold=False)
    gpt = Gpt()
    ids = torch.randint(0, 32, (2, 8), generator=gen)
    labels = torch.randint(0, 32, (2, 8), generator=gen)
    labels[1, 3] = -100
    for dynamo, tag in [(False, "ts"), (True, "dynamo")]:
        if want(f"gpt_{tag}"):
            export_gpt(f"gpt_{tag}", gpt, (ids,), ["ids"], "logits", dynamo)
        if want(f"gpt_loss_{tag}"):
            export_gpt(f"gpt_loss_{tag}", GptLoss(gpt), (ids, labels), ["ids", "labels"], "loss", dynamo)


if __name__ == "__main__":
    # Not under no_grad: with grad enabled PyTorch keeps TransformerEncoderLayer
    # on its composite path (the fused inference kernel has no ONNX export).
    main(set(sys.argv[1:]))
