"""The same training step as ckopt's generated models, in JAX on XLA's CPU backend.

Usage: jax_step.py MODEL DEPTH WIDTH BATCH [STEPS] [sqrt] [adamw] [heads=H seq=S vocab=V]
  MODEL: mlp | resmlp (WIDTH = features) | resnet (WIDTH = channels, BATCH
  images of 3x16x16, 10 classes, as `ckopt-gen resnet` by default) |
  gpt (BATCH sequences of seq tokens, `heads`, `vocab`; defaults 4, 64, 256).
Prints one JSON line: compile_ms, step_ms (median of STEPS steps after the
compiling one), step_times_ms, loss (first step).

The models follow ckopt-gen's definitions op for op:
  mlp     h = relu(h W_i + b_i); loss = mean((h - t)^2)
  resmlp  h = h + relu(LN(h) W1_i + b1_i) W2_i + b2_i, LN without affine
          parameters (eps 1e-5, biased variance); loss = mean((h - t)^2)
  resnet  relu(conv3x3(x)) 3 -> C, maxpool 2x2; blocks
          h = relu(h + conv3x3(relu(conv3x3(h)))); global average pool;
          linear head; softmax cross-entropy against one-hot targets
  gpt     h = wte[ids] + wpe[positions] as rows [B*S, W]; per layer
          n = LN(h); q, k, v = n Wq, n Wk, n Wv split into [B*H, S, D];
          p = softmax(select(row >= col, q k^T / sqrt D, -inf));
          h = h + merge(p v) Wo; h = h + gelu(LN(h) W1 + b1) W2 + b2 with
          gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) (MLP 4*W);
          logits = LN(h) wte^T; loss = mean over labels != -100 of
          logsumexp(logits) - logits[label] (integer labels)
The step is jit-compiled with the parameters donated (updated in place, as
ckopt's sgd pass does); `sqrt` wraps sqrt(depth) segments in jax.checkpoint.
The update is SGD (lr 0.01), or with `adamw` optax.adamw (lr 0.001, betas
0.9/0.999, eps 1e-8, weight decay 0.01: ckopt's `adamw` pass defaults)
with its state donated too (the moments updated in place, as ckopt's
`ck.opt_state` arguments are).
"""
import json, math, sys, time
import jax, jax.numpy as jnp

model, depth, width, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
steps = int(sys.argv[5]) if len(sys.argv) > 5 else 7
remat = "sqrt" in sys.argv[6:]
adamw = "adamw" in sys.argv[6:]
kv = dict(a.split("=", 1) for a in sys.argv[6:] if "=" in a)
heads, seq, vocab = int(kv.get("heads", 4)), int(kv.get("seq", 64)), int(kv.get("vocab", 256))
key = jax.random.PRNGKey(0)
k = lambda i: jax.random.fold_in(key, i)
lr = 0.01

def u(i, shape, s):
    return jax.random.uniform(k(i), shape, minval=-s, maxval=s)

if model in ("mlp", "resmlp"):
    s = 1.0 / math.sqrt(width)
    per = 1 if model == "mlp" else 2
    params = [[(u(2 * i * per + 2 * j, (width, width), s), jnp.zeros(width)) for j in range(per)] for i in range(depth)]
    x = u(10**6, (batch, width), 1.0)
    t = u(10**6 + 1, (batch, width), 1.0)
elif model == "gpt":
    W, F = width, 4 * width
    s, sf = 1.0 / math.sqrt(W), 1.0 / math.sqrt(F)
    params = {
        "wte": u(1, (vocab, W), 0.1),
        "wpe": u(2, (seq, W), 0.1),
        "layers": [dict(wq=u(10 + 8 * i, (W, W), s), wk=u(11 + 8 * i, (W, W), s), wv=u(12 + 8 * i, (W, W), s), wo=u(13 + 8 * i, (W, W), s),
                        w1=u(14 + 8 * i, (W, F), s), b1=jnp.zeros(F), w2=u(15 + 8 * i, (F, W), sf), b2=jnp.zeros(W)) for i in range(depth)],
    }
    x = jax.random.randint(k(10**6), (batch, seq), 0, vocab)
    t = jax.random.randint(k(10**6 + 1), (batch, seq), 0, vocab)
else:
    C, image, classes = width, 16, 10
    params = {
        "stem": u(1, (C, 3, 3, 3), 1.0 / math.sqrt(27)),
        "blocks": [(u(10 + 2 * i, (C, C, 3, 3), 1.0 / math.sqrt(9 * C)), u(11 + 2 * i, (C, C, 3, 3), 1.0 / math.sqrt(9 * C))) for i in range(depth)],
        "fc": (u(5, (C, classes), 1.0 / math.sqrt(C)), jnp.zeros(classes)),
    }
    x = u(10**6, (batch, 3, image, image), 1.0)
    t = jax.nn.one_hot(jnp.arange(batch) % classes, classes)

def ln(h):
    c = h - h.mean(axis=1, keepdims=True)
    return c * jax.lax.rsqrt((c * c).mean(axis=1, keepdims=True) + 1e-5)

def block(h, p):
    if model == "mlp":
        return jax.nn.relu(h @ p[0][0] + p[0][1])
    return h + (jax.nn.relu(ln(h) @ p[0][0] + p[0][1]) @ p[1][0] + p[1][1])

def gelu(x):
    return (0.5 * x) * (1.0 + jax.lax.erf(x * (1.0 / math.sqrt(2.0))))

def gpt_block(h, p):
    B, S, H = batch, seq, heads
    D = width // H
    split = lambda a: a.reshape(B, S, H, D).transpose(0, 2, 1, 3).reshape(B * H, S, D)
    n = ln(h)
    q, kk, v = split(n @ p["wq"]), split(n @ p["wk"]), split(n @ p["wv"])
    sc = jnp.einsum("bqd,bkd->bqk", q, kk) * (1.0 / math.sqrt(D))
    row = jax.lax.broadcasted_iota(jnp.int32, sc.shape, 1)
    col = jax.lax.broadcasted_iota(jnp.int32, sc.shape, 2)
    sc = jnp.where(row >= col, sc, -jnp.inf)
    e = jnp.exp(sc - sc.max(axis=-1, keepdims=True))
    pr = e / e.sum(axis=-1, keepdims=True)
    ctx = jnp.einsum("bqk,bkd->bqd", pr, v).reshape(B, H, S, D).transpose(0, 2, 1, 3).reshape(B * S, width)
    h = h + ctx @ p["wo"]
    return h + (gelu(ln(h) @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"])

def gpt_loss(params, ids, labels):
    h = params["wte"][ids.reshape(-1)] + params["wpe"][jnp.tile(jnp.arange(seq), batch)]
    layers = params["layers"]
    if remat:
        seg = max(1, int(math.sqrt(depth)))
        def run(h, sub):
            for p in sub:
                h = gpt_block(h, p)
            return h
        for s0 in range(0, depth, seg):
            h = jax.checkpoint(run)(h, layers[s0:s0 + seg])
    else:
        for p in layers:
            h = gpt_block(h, p)
    z = ln(h) @ params["wte"].T
    lab = labels.reshape(-1)
    kept = lab != -100
    m = z.max(axis=1, keepdims=True)
    lse = (m + jnp.log(jnp.exp(z - m).sum(axis=1, keepdims=True)))[:, 0]
    zl = jnp.take_along_axis(z, jnp.where(kept, lab, 0)[:, None], axis=1)[:, 0]
    return jnp.sum(jnp.where(kept, lse - zl, 0.0)) / jnp.sum(kept)

def conv(h, w):
    return jax.lax.conv_general_dilated(h, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW"))

def loss_fn(params, x, t):
    if model == "gpt":
        return gpt_loss(params, x, t)
    if model == "resnet":
        h = jax.nn.relu(conv(x, params["stem"]))
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        for wa, wb in params["blocks"]:
            h = jax.nn.relu(h + conv(jax.nn.relu(conv(h, wa)), wb))
        f = h.mean(axis=(2, 3))
        z = f @ params["fc"][0] + params["fc"][1]
        return -jnp.mean(jnp.sum(t * jax.nn.log_softmax(z, axis=1), axis=1))
    h = x
    if remat:
        seg = max(1, int(math.sqrt(depth)))
        def run(h, sub):
            for p in sub:
                h = block(h, p)
            return h
        for s0 in range(0, depth, seg):
            h = jax.checkpoint(run)(h, params[s0:s0 + seg])
    else:
        for p in params:
            h = block(h, p)
    return jnp.mean((h - t) ** 2)

def sgd(params, x, t):
    l, g = jax.value_and_grad(loss_fn)(params, x, t)
    return l, jax.tree.map(lambda a, b: a - lr * b, params, g)

if adamw:
    import optax
    opt = optax.adamw(learning_rate=0.001, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.01)
    state = opt.init(params)

    def adamw_step(params, state, x, t):
        l, g = jax.value_and_grad(loss_fn)(params, x, t)
        updates, state = opt.update(g, state, params)
        return l, optax.apply_updates(params, updates), state

    jstep = jax.jit(adamw_step, donate_argnums=(0, 1))

    def step(params, x, t):
        global state
        l, params, state = jstep(params, state, x, t)
        return l, params
else:
    step = jax.jit(sgd, donate_argnums=(0,))
t0 = time.perf_counter()
l, params = step(params, x, t)
l.block_until_ready()
compile_ms = (time.perf_counter() - t0) * 1e3
times = []
for _ in range(steps):
    t0 = time.perf_counter()
    l2, params = step(params, x, t)
    l2.block_until_ready()
    times.append((time.perf_counter() - t0) * 1e3)
srt = sorted(times)
print(json.dumps({"peer": "jax-cpu", "jax": jax.__version__, "optax": __import__("optax").__version__ if adamw else None, "model": model, "depth": depth, "width": width, "batch": batch,
                  **({"heads": heads, "seq": seq, "vocab": vocab} if model == "gpt" else {}),
                  "remat": "sqrt" if remat else "none", "optimizer": "adamw" if adamw else "sgd", "compile_ms": round(compile_ms, 1),
                  "step_ms": round(srt[len(srt) // 2], 3), "step_times_ms": [round(v, 3) for v in times], "loss": float(l)}))
