"""ckopt.Trainer's training job: AdamW, a dataset in safetensors, a
schedule, evaluation, and a checkpoint that resumes exactly."""
import json
import struct

import numpy as np
import pytest

import ckopt


def write_safetensors(path, arrays):
    """The safetensors format by hand (8-byte header size, JSON header, data)."""
    header, blobs, off = {}, [], 0
    for name, a in arrays.items():
        b = np.ascontiguousarray(a, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (20, 8)).astype(np.float32)
    p = tmp_path / "d.safetensors"
    write_safetensors(p, {"x": x, "target": 0.5 * x})
    return str(p)


def test_adamw_fit_save_resume_is_exact(data, tmp_path):
    m = ckopt.gen("mlp", depth=2, width=8, batch=4)
    full = ckopt.Trainer(m, "mlp", optimizer="adamw", lr=0.01, weight_decay=0.0)
    assert full.hyperparameters["lr"] == pytest.approx(0.01)
    assert full.hyperparameters["weight_decay"] == 0.0
    r = full.fit(data, steps=8, shuffle_seed=3, eval_data=data, eval_every=4, schedule="cosine", warmup=2)
    assert len(r["losses"]) == 8 and [e["step"] for e in r["eval"]] == [4, 8]
    assert r["lrs"][0] == pytest.approx(0.005) and r["lrs"][-1] < 1e-3
    a = ckopt.Trainer(m, "mlp", optimizer="adamw", lr=0.01, weight_decay=0.0)
    first = a.fit(data, steps=4, shuffle_seed=3)
    a.save(str(tmp_path / "ck"))
    b = ckopt.Trainer(m, "mlp", optimizer="adamw", lr=0.01, weight_decay=0.0)
    assert b.resume(str(tmp_path / "ck")) == 4
    second = b.fit(data, steps=4, shuffle_seed=3)
    # Without a schedule both runs train at the constant lr: compare with a plain run.
    plain = ckopt.Trainer(m, "mlp", optimizer="adamw", lr=0.01, weight_decay=0.0).fit(data, steps=8, shuffle_seed=3)
    assert first["losses"] + second["losses"] == plain["losses"]
    assert second["start_step"] == 4


def test_bad_options_and_data_are_errors(data, tmp_path):
    m = ckopt.gen("mlp", depth=1, width=8, batch=4)
    with pytest.raises(ValueError, match="optimizer must be 'sgd' or 'adamw'"):
        ckopt.Trainer(m, "mlp", optimizer="lion")
    with pytest.raises(ValueError, match="AdamW's"):
        ckopt.Trainer(m, "mlp", betas=(0.9, 0.99))
    t = ckopt.Trainer(m, "mlp", optimizer="sgd", lr=0.1)
    t.lr = 0.2
    assert t.hyperparameters["lr"] == pytest.approx(0.2)
    bad = tmp_path / "bad.safetensors"
    write_safetensors(bad, {"x": np.zeros((8, 3)), "target": np.zeros((8, 8))})
    with pytest.raises(ckopt.Error, match="expected F32 \\[N, 8\\]"):
        t.fit(str(bad), steps=1)
    with pytest.raises(ckopt.Error, match="cannot open"):
        t.resume(str(tmp_path / "nowhere"))
