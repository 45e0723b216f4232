"""DistributedDataParallel over the compiled module: 2 processes (gloo on
127.0.0.1), each on half the batch, give the gradients of one process on
the whole batch (eager), and train in step."""

import copy
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import ckopt.torch as ct
from conftest import MLP, grads, mlp_batch, rel


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world, port, out, executor):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        model = MLP()
        x, t = mlp_batch(7, n=8)
        half = slice(rank * 4, rank * 4 + 4)
        cm = ct.compile(model, (x[half], t[half]), mode="sqrt", executor=executor)
        ddp = torch.nn.parallel.DistributedDataParallel(cm)
        opt = torch.optim.AdamW(ddp.parameters(), lr=1e-2)
        first = None
        for step in range(3):
            x, t = mlp_batch(7 + step, n=8)
            opt.zero_grad()
            loss = ddp(x[half], t[half])
            loss.backward()
            if first is None:
                first = grads(model)
            opt.step()
        if rank == 0:
            torch.save({"grads": first, "state": model.state_dict()}, out)
    finally:
        dist.destroy_process_group()


def test_ddp_two_processes_equal_one_process(tmp_path):
    out = str(tmp_path / "ddp.pt")
    mp.spawn(_worker, args=(2, _free_port(), out, "aten"), nprocs=2, join=True)
    got = torch.load(out)
    torch.manual_seed(0)
    ref = MLP()
    opt = torch.optim.AdamW(ref.parameters(), lr=1e-2)
    want = None
    for step in range(3):
        x, t = mlp_batch(7 + step, n=8)
        opt.zero_grad()
        ref(x, t).backward()
        if want is None:
            want = grads(ref)
        opt.step()
    for k in want:
        assert rel(got["grads"][k], want[k]) <= 1e-5, k
    for k, v in ref.state_dict().items():
        assert rel(got["state"][k], v) <= 1e-5, k
