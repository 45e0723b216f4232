"""The same training step as ckopt's generated models, in JAX on XLA's CPU backend.

Usage: jax_step.py MODEL DEPTH WIDTH BATCH [STEPS] [sqrt] [adamw]
  MODEL: mlp | resmlp (WIDTH = features) | resnet (WIDTH = channels, BATCH
  images of 3x16x16, 10 classes, as `ckopt-gen resnet` by default).
Prints one JSON line: compile_ms, step_ms (median of STEPS steps after the
compiling one), step_times_ms, loss (first step).

The models follow ckopt-gen's definitions op for op:
  mlp     h = relu(h W_i + b_i); loss = mean((h - t)^2)
  resmlp  h = h + relu(LN(h) W1_i + b1_i) W2_i + b2_i, LN without affine
          parameters (eps 1e-5, biased variance); loss = mean((h - t)^2)
  resnet  relu(conv3x3(x)) 3 -> C, maxpool 2x2; blocks
          h = relu(h + conv3x3(relu(conv3x3(h)))); global average pool;
          linear head; softmax cross-entropy against one-hot targets
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

def conv(h, w):
    return jax.lax.conv_general_dilated(h, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW"))

def loss_fn(params, x, t):
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
                  "remat": "sqrt" if remat else "none", "optimizer": "adamw" if adamw else "sgd", "compile_ms": round(compile_ms, 1),
                  "step_ms": round(srt[len(srt) // 2], 3), "step_times_ms": [round(v, 3) for v in times], "loss": float(l)}))
