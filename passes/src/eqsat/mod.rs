//! Equality saturation over a function's dataflow (egg 0.11). The only place
//! in ckopt that uses egg; `inplace.rs` is its client.
//!
//! Language (`CkLang`): one e-node per op, carrying its kind, its own
//! attributes (not the `ck.*` pass attributes), its result type and a `uid`
//! (1 + the index of the op it came from; 0 for e-nodes built by rewrites).
//! The uid keeps distinct ops distinct: egg would otherwise hash-cons two
//! identical ops into one e-class, which is CSE and would, for example, undo
//! remat's recomputation or stretch lifetimes. Arguments are `Arg(i)` leaves.
//! `InPlace { n }` is the same op writing its result over operand `n`: the
//! same value, allocating no new bytes.
//!
//! Flow (`simplify_func`): translate (each value an e-class) → saturate with
//! the named rules of `rules.rs` under the node, iteration and time limits
//! (SimpleScheduler: every rule sees every match; the in-place forms are
//! not saturated but added to every e-class at extraction, see
//! `extract_in_schedule_order`) → extract with a cost equal
//! to the bytes each e-node newly allocates (0 for `InPlace`, the result
//! size for an op, combined along the term by max so deep residual DAGs do
//! not overflow a tree sum; ties go to the shallower term) → rebuild the body
//! in the original schedule: op i becomes the best e-node of its e-class (or
//! disappears if its e-class already has a value, as `x*1` → `x`), keeping
//! the op's pass attributes when the e-node is its own. The in-place choice
//! of each rebuilt op is returned as a preference; `inplace.rs` writes only
//! the legal ones. Ops made dead by the rewrites are dropped.
//!
//! When no algebraic rule fires on the translated e-graph (the generated
//! MLP, LSTM, ResNet gradients), saturation would stop after one iteration
//! with nothing changed, so egg's e-graph is not built at all: extraction
//! and rebuild read the translation itself (`Flat`, one e-node per e-class),
//! and the report is what egg's runner says then (`saturated`, 1 iteration).
//! On the 1M-op LSTM gradient building, saturating and freeing egg's
//! e-graph was most of the pass.
//!
//! Limits (honest): one e-graph per function, with about one e-node per op
//! (plus what the algebraic rules add); it saturates in 1–3 iterations, so
//! the defaults (2M nodes, 10 iterations, 60 s) are not reached by the
//! generated models up to about 2M ops per function (lstm depth 2500 seq 8:
//! 1.0M ops in its gradient). The time limit is only a safety net: it
//! depends on the machine, so the deterministic limits (nodes, iterations)
//! are the ones meant to act; when a limit is hit the stop reason is reported and the
//! partially saturated e-graph is still extracted (every e-node in a class is
//! equivalent, so the result is sound, only less simplified).

pub mod rules;

use ckopt_ir::attr::format_dict;
use ckopt_ir::ops::ATTR_INPLACE;
use ckopt_ir::{Attrs, Func, Op, OpKind, TensorType, ValueId};
use egg::{Analysis, CostFunction, DidMerge, EGraph, Id, Language, Runner, SimpleScheduler, StopReason};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// An op's own attributes, compared by their printed form and hashed by a
/// hash of it computed once (e-nodes are hashed and compared very often).
#[derive(Clone, Debug)]
pub struct AttrKey {
    pub text: String,
    pub attrs: Attrs,
    digest: u64,
}

impl AttrKey {
    pub fn new(attrs: Attrs) -> Arc<AttrKey> {
        use std::hash::{Hash, Hasher};
        let text = format_dict(&attrs);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        Arc::new(AttrKey { text, attrs, digest: h.finish() })
    }
}
impl PartialEq for AttrKey {
    fn eq(&self, o: &Self) -> bool {
        self.digest == o.digest && self.text == o.text
    }
}
impl Eq for AttrKey {}
impl std::hash::Hash for AttrKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.digest.hash(h)
    }
}
impl PartialOrd for AttrKey {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for AttrKey {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.text.cmp(&o.text)
    }
}

/// The operator of an e-node.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Head {
    /// Function argument `i`.
    Arg(u32),
    /// An op computing into a new buffer.
    Op { kind: OpKind, attrs: Arc<AttrKey> },
    /// The same op writing its result over operand `n`.
    InPlace { kind: OpKind, attrs: Arc<AttrKey>, n: u8 },
}

/// The children of an e-node.
pub type Children = smallvec::SmallVec<[Id; 3]>;

/// An e-node of the ck language.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CkNode {
    pub head: Head,
    /// Shared: cloning an e-node must not copy the shape.
    pub ty: Arc<TensorType>,
    /// 1 + index of the op this e-node came from; 0 if built by a rewrite.
    pub uid: u32,
    /// Inline up to three (no heap allocation per e-node: the e-graph
    /// holds each e-node three times, and frees them all at the end).
    pub children: Children,
}

impl CkNode {
    /// Kind and attributes of an op e-node, in place or not.
    pub fn op(&self) -> Option<(OpKind, &Attrs)> {
        match &self.head {
            Head::Op { kind, attrs } | Head::InPlace { kind, attrs, .. } => Some((*kind, &attrs.attrs)),
            Head::Arg(_) => None,
        }
    }
    /// A new (uid 0) op e-node.
    pub fn new_op(kind: OpKind, attrs: Attrs, ty: Arc<TensorType>, children: Children) -> CkNode {
        CkNode { head: Head::Op { kind, attrs: AttrKey::new(attrs) }, ty, uid: 0, children }
    }
}

impl Language for CkNode {
    type Discriminant = (std::mem::Discriminant<Head>, Option<OpKind>);
    fn discriminant(&self) -> Self::Discriminant {
        (std::mem::discriminant(&self.head), self.op().map(|(k, _)| k))
    }
    /// Operator equality ignoring the uid (rules here are custom searchers,
    /// but egg's pattern machinery relies on this meaning).
    fn matches(&self, other: &Self) -> bool {
        self.head == other.head && self.ty == other.ty && self.children.len() == other.children.len()
    }
    fn children(&self) -> &[Id] {
        &self.children
    }
    fn children_mut(&mut self) -> &mut [Id] {
        &mut self.children
    }
}

/// E-class analysis: the (unique) tensor type of the class.
#[derive(Clone, Debug, Default)]
pub struct TypeOf;

impl Analysis<CkNode> for TypeOf {
    type Data = Arc<TensorType>;
    fn make(_eg: &mut EGraph<CkNode, Self>, enode: &CkNode, _id: Id) -> Arc<TensorType> {
        enode.ty.clone()
    }
    fn merge(&mut self, _a: &mut Arc<TensorType>, _b: Arc<TensorType>) -> DidMerge {
        // Rewrites preserve types, so merged classes agree.
        DidMerge(false, false)
    }
}

pub type CkGraph = EGraph<CkNode, TypeOf>;

/// Extraction cost: (newly allocated bytes along the costliest path, depth).
pub struct NewBytes;

impl CostFunction<CkNode> for NewBytes {
    type Cost = (u64, u64);
    fn cost<C>(&mut self, enode: &CkNode, mut costs: C) -> (u64, u64)
    where
        C: FnMut(Id) -> (u64, u64),
    {
        let own = match enode.head {
            Head::Op { .. } => enode.ty.bytes(),
            Head::InPlace { .. } | Head::Arg(_) => 0,
        };
        let (mut b, mut d) = (0u64, 0u64);
        for &c in &enode.children {
            let (cb, cd) = costs(c);
            b = b.max(cb);
            d = d.max(cd);
        }
        (own.saturating_add(b), d.saturating_add(1))
    }
}

/// Runner limits (pass options of `inplace`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    pub node_limit: usize,
    pub iter_limit: usize,
    pub time_limit: Duration,
}

/// The `inplace` pass's defaults, from its record in the registry.
impl Default for Limits {
    fn default() -> Self {
        crate::inplace::parse_limits(&crate::manager::PassOptions::new("inplace")).expect("the registry's defaults of inplace parse")
    }
}

/// What saturating one function did.
#[derive(Clone, Debug, Default)]
pub struct SatReport {
    pub stop_reason: String,
    pub iterations: usize,
    pub enodes: usize,
    pub eclasses: usize,
    /// Times each rule was applied (summed over iterations), by rule name.
    pub applied: Vec<(String, usize)>,
    /// Ops removed because the rewrites made them equal to an earlier value or dead.
    pub ops_removed: usize,
    /// Ops replaced by a different (simpler) op.
    pub ops_replaced: usize,
}

/// The stop reason as reported, with the configured limit that was hit.
pub fn stop_reason_name(r: &StopReason, limits: &Limits) -> String {
    match r {
        StopReason::Saturated => "saturated".into(),
        StopReason::IterationLimit(_) => format!("iteration limit ({})", limits.iter_limit),
        StopReason::NodeLimit(_) => format!("node limit ({})", limits.node_limit),
        StopReason::TimeLimit(_) => format!("time limit ({} ms)", limits.time_limit.as_millis()),
        StopReason::Other(s) => format!("other: {s}"),
    }
}

/// What the rules, the extraction and the rebuild read of an e-graph:
/// egg's, or [`Flat`] (the e-graph as translated, before any rewrite).
pub trait Classes {
    /// The canonical e-class of `c`.
    fn find(&self, c: Id) -> Id;
    /// The e-nodes of e-class `c` (canonical), in `CkNode` order.
    fn nodes(&self, c: Id) -> &[CkNode];
    /// The type of e-class `c`.
    fn ty(&self, c: Id) -> &Arc<TensorType>;
}

impl Classes for CkGraph {
    fn find(&self, c: Id) -> Id {
        EGraph::find(self, c)
    }
    fn nodes(&self, c: Id) -> &[CkNode] {
        &self[c].nodes
    }
    fn ty(&self, c: Id) -> &Arc<TensorType> {
        &self[c].data
    }
}

/// The e-graph of a translated function before saturation: e-class `i`
/// holds e-node `i` alone (every op e-node has its own uid and every
/// argument its own index, so egg's hash-consing merges none, and adding
/// them to egg in this order gives the same ids).
pub struct Flat {
    pub nodes: Vec<CkNode>,
}

impl Classes for Flat {
    fn find(&self, c: Id) -> Id {
        c
    }
    fn nodes(&self, c: Id) -> &[CkNode] {
        std::slice::from_ref(&self.nodes[usize::from(c)])
    }
    fn ty(&self, c: Id) -> &Arc<TensorType> {
        &self.nodes[usize::from(c)].ty
    }
}

/// Simplifies `f` in place (see the module doc). Returns, per op of the new
/// body, the operand the extraction would like the op to overwrite.
///
/// When no algebraic rule fires on the translated e-graph, saturation
/// would stop after its first iteration (saturated) with the e-graph
/// unchanged, so egg's e-graph is not built: extraction and rebuild read
/// the translation ([`Flat`]) and the report is the one egg's runner
/// gives (unless a runner limit would have stopped it first: then egg runs).
pub fn simplify_func(f: &mut Func, limits: Limits) -> (Vec<Option<usize>>, SatReport) {
    simplify(f, limits, true)
}

/// [`simplify_func`]; `flat_ok` false always builds and saturates egg's
/// e-graph (a test checks that both ways give the same result).
fn simplify(f: &mut Func, limits: Limits, flat_ok: bool) -> (Vec<Option<usize>>, SatReport) {
    // 1. Translate: e-node i is e-class i.
    let start = std::time::Instant::now();
    let mut nodes: Vec<CkNode> = Vec::with_capacity(f.params.len() + f.body.len());
    let mut class_of: Vec<Option<Id>> = vec![None; f.values.len()];
    let mut types: HashMap<TensorType, Arc<TensorType>> = HashMap::new();
    let mut intern = |t: &TensorType| types.entry(t.clone()).or_insert_with(|| Arc::new(t.clone())).clone();
    for (i, p) in f.params.iter().enumerate() {
        class_of[p.value.index()] = Some(Id::from(nodes.len()));
        nodes.push(CkNode { head: Head::Arg(i as u32), ty: intern(f.ty(p.value)), uid: 0, children: Children::new() });
    }
    let mut op_class: Vec<Option<Id>> = vec![None; f.body.len()];
    // Most ops have no attributes of their own: one shared key for them.
    let no_attrs = AttrKey::new(Attrs::new());
    for (i, op) in f.body.iter().enumerate() {
        let Some(r) = op.result else { continue };
        let Some(children) = op.operands.iter().map(|o| class_of[o.index()]).collect::<Option<Children>>() else {
            // An operand defined nowhere before (the verifier rejects it):
            // leave the function as it is.
            let report = SatReport { stop_reason: "not translated (an operand is used before its definition)".into(), ..Default::default() };
            return (vec![None; f.body.len()], report);
        };
        let id = Id::from(nodes.len());
        nodes.push(CkNode { head: Head::Op { kind: op.kind, attrs: attr_key(op, &no_attrs) }, ty: intern(f.ty(r)), uid: i as u32 + 1, children });
        class_of[r.index()] = Some(id);
        op_class[i] = Some(id);
    }
    let flat = Flat { nodes };
    let n = flat.nodes.len();
    if flat_ok && limits.iter_limit >= 1 && n <= limits.node_limit && !rules::any_algebraic_match(&flat, &flat.nodes) && start.elapsed() <= limits.time_limit {
        let report = SatReport { stop_reason: "saturated".into(), iterations: 1, enodes: n, eclasses: n, ..Default::default() };
        return finish(f, &flat, n, report, Default::default(), &class_of, &op_class);
    }
    // 2. Saturate in egg.
    let mut eg: CkGraph = EGraph::new(TypeOf);
    let mut ids: Vec<Id> = Vec::with_capacity(n);
    for mut node in flat.nodes {
        for c in node.children.iter_mut() {
            *c = ids[usize::from(*c)];
        }
        ids.push(eg.add(node));
    }
    for c in class_of.iter_mut().chain(op_class.iter_mut()).flatten() {
        *c = ids[usize::from(*c)];
    }
    let runner = Runner::default()
        .with_scheduler(SimpleScheduler)
        .with_node_limit(limits.node_limit)
        .with_iter_limit(limits.iter_limit)
        .with_time_limit(limits.time_limit)
        .with_egraph(eg)
        .run(&rules::algebraic_rules());
    let report = SatReport {
        stop_reason: runner.stop_reason.as_ref().map(|r| stop_reason_name(r, &limits)).unwrap_or_else(|| "none".into()),
        iterations: runner.iterations.len(),
        enodes: runner.egraph.total_number_of_nodes(),
        eclasses: runner.egraph.number_of_classes(),
        ..Default::default()
    };
    let mut applied: std::collections::BTreeMap<String, usize> = Default::default();
    for it in &runner.iterations {
        for (k, v) in &it.applied {
            *applied.entry(k.to_string()).or_default() += v;
        }
    }
    let eg = runner.egraph;
    let slots = eg.classes().map(|c| usize::from(c.id) + 1).max().unwrap_or(0);
    finish(f, &eg, slots, report, applied, &class_of, &op_class)
}

/// Counts the in-place forms, extracts and rebuilds the body from the
/// saturated e-graph `eg` (e-class ids below `slots`).
fn finish<G: Classes + AllNodes>(
    f: &mut Func,
    eg: &G,
    slots: usize,
    mut report: SatReport,
    mut applied: std::collections::BTreeMap<String, usize>,
    class_of: &[Option<Id>],
    op_class: &[Option<Id>],
) -> (Vec<Option<usize>>, SatReport) {
    // The in-place forms, added to every e-class at extraction: saturating
    // with them would apply each once per op e-node.
    let mut forms = [0usize; rules::INPLACE_FORMS.len()];
    eg.for_each_node(&mut |n| {
        for i in rules::inplace_forms_of(n) {
            forms[i] += 1;
        }
    });
    for (form, count) in rules::INPLACE_FORMS.iter().zip(forms) {
        if count > 0 {
            *applied.entry(form.id.name().to_string()).or_default() += count;
        }
    }
    report.applied = applied.into_iter().collect();
    // 3. Extract and rebuild.
    let best = extract_in_schedule_order(eg, slots, f, class_of, op_class);
    let mut rb = Rebuild { eg, best: &best, mat: vec![None; best.len()], body: Vec::new(), pref: Vec::new(), replaced: 0 };
    for p in &f.params {
        if let Some(c) = class_of[p.value.index()] {
            rb.mat[usize::from(eg.find(c))] = Some(p.value);
        }
    }
    let nv_before = f.values.len();
    let mut orig_used = vec![false; nv_before];
    for op in &f.body {
        for &o in &op.operands {
            orig_used[o.index()] = true;
        }
    }
    let old_body = std::mem::take(&mut f.body);
    let old_len = old_body.len();
    let mut ret: Option<Op> = None;
    for (i, op) in old_body.into_iter().enumerate() {
        let Some(c) = op_class[i] else {
            ret = Some(op);
            continue;
        };
        let c = eg.find(c);
        if rb.mat[usize::from(c)].is_some() {
            continue;
        }
        if rb.emit(f, c, Some((i, &op)), 0).is_none() {
            // Fallback: the original op over the values of its operands.
            let mut o = op.clone();
            o.attrs.remove(ATTR_INPLACE);
            let ok = o.operands.iter_mut().all(|v| match class_of[v.index()].and_then(|c| rb.mat[usize::from(eg.find(c))]) {
                Some(nv) => {
                    *v = nv;
                    true
                }
                None => false,
            });
            if !ok {
                // Unreachable: operands come earlier in the schedule.
                o = op;
            }
            rb.mat[usize::from(c)] = Some(o.result.unwrap_or(ValueId(0)));
            rb.body.push(o);
            rb.pref.push(None);
        }
    }
    let mut body = rb.body;
    let mut pref = rb.pref;
    let replaced = rb.replaced;
    if let Some(mut r) = ret {
        for v in &mut r.operands {
            if let Some(nv) = class_of.get(v.index()).copied().flatten().and_then(|c| rb.mat[usize::from(eg.find(c))]) {
                *v = nv;
            }
        }
        body.push(r);
        pref.push(None);
    }
    // 4. Drop ops that the rewrites left without a reader.
    let (body, pref) = drop_dead(f, body, pref, &orig_used, nv_before);
    report.ops_removed = old_len.saturating_sub(body.len());
    report.ops_replaced = replaced;
    f.body = body;
    (pref, report)
}

/// Visits every e-node of an e-graph (the in-place form counts).
pub trait AllNodes {
    fn for_each_node(&self, visit: &mut dyn FnMut(&CkNode));
}

impl AllNodes for CkGraph {
    fn for_each_node(&self, visit: &mut dyn FnMut(&CkNode)) {
        for class in self.classes() {
            for n in &class.nodes {
                visit(n);
            }
        }
    }
}

impl AllNodes for Flat {
    fn for_each_node(&self, visit: &mut dyn FnMut(&CkNode)) {
        for n in &self.nodes {
            visit(n);
        }
    }
}

/// Removes ops (other than the return) whose result nobody reads when that
/// value is new or its original had readers: the pass does not act as a
/// general DCE on ops the input already left unused.
fn drop_dead(
    f: &Func,
    body: Vec<Op>,
    pref: Vec<Option<usize>>,
    orig_used: &[bool],
    nv_before: usize,
) -> (Vec<Op>, Vec<Option<usize>>) {
    let mut used = vec![false; f.values.len()];
    let mut keep = vec![true; body.len()];
    for (i, op) in body.iter().enumerate().rev() {
        if let Some(r) = op.result {
            let made_dead = r.index() >= nv_before || orig_used.get(r.index()).copied().unwrap_or(false);
            if !used[r.index()] && made_dead {
                keep[i] = false;
                continue;
            }
        }
        for &o in &op.operands {
            used[o.index()] = true;
        }
    }
    let mut nb = Vec::with_capacity(body.len());
    let mut np = Vec::with_capacity(body.len());
    for ((op, p), k) in body.into_iter().zip(pref).zip(keep) {
        if k {
            nb.push(op);
            np.push(p);
        }
    }
    (nb, np)
}

/// Extraction: the cheapest e-node of every e-class under `NewBytes`,
/// computed in ONE pass over the e-classes in schedule order (arguments,
/// then the e-class of each op at its first op). Every original e-node's
/// children come earlier in that order, so each e-class gets a cost; an
/// e-node whose children are not costed yet (a self loop such as
/// `mul(C, one)` in C, or a later e-class) is skipped, which also makes the
/// choice acyclic. egg's `Extractor` computes the same costs by iterating to
/// a fixpoint over all e-classes in hash order, which takes O(n·depth) on a
/// deep training graph (seconds for a 100-layer gradient); this is O(e-nodes).
///
/// The in-place forms (`rules::INPLACE_FORMS`) are not in the e-graph: each
/// e-class is costed as if it held, besides its e-nodes, the in-place form
/// of each of them that a rule allows. An in-place form only ever matches
/// where its op does and rewrites to what the op rewrites to, so
/// saturating with these rules would have added exactly these e-nodes and
/// nothing else (and doubled the e-graph). Candidates are visited in the
/// e-nodes' order (`Ord` of `CkNode`: egg keeps a class sorted, and every
/// `InPlace` head sorts after every `Op` head), the first cheapest wins.
fn extract_in_schedule_order<G: Classes>(eg: &G, slots: usize, f: &Func, class_of: &[Option<Id>], op_class: &[Option<Id>]) -> Vec<Option<CkNode>> {
    let mut cost: Vec<Option<(u64, u64)>> = vec![None; slots];
    let mut best: Vec<Option<CkNode>> = vec![None; slots];
    let order = f.params.iter().filter_map(|p| class_of[p.value.index()]).chain(op_class.iter().flatten().copied());
    let mut cf = NewBytes;
    // (index of the e-node in its class, in-place form index)
    let mut forms: Vec<(usize, usize)> = Vec::new();
    for c in order {
        let c = eg.find(c);
        if cost[usize::from(c)].is_some() {
            continue;
        }
        let nodes = eg.nodes(c);
        let mut pick: Option<((u64, u64), usize, Option<usize>)> = None;
        forms.clear();
        for (j, n) in nodes.iter().enumerate() {
            if !n.children.iter().all(|&ch| cost[usize::from(eg.find(ch))].is_some()) {
                continue;
            }
            let k = cf.cost(n, |ch| cost[usize::from(eg.find(ch))].unwrap_or_default());
            if pick.as_ref().is_none_or(|(pk, _, _)| k < *pk) {
                pick = Some((k, j, None));
            }
            forms.extend(rules::inplace_forms_of(n).map(|i| (j, i)));
        }
        // The in-place forms in `CkNode` order: kind, attributes, operand,
        // then type, uid and children.
        forms.sort_by(|&(a, fa), &(b, fb)| {
            let (x, y) = (&nodes[a], &nodes[b]);
            let (xo, yo) = (rules::INPLACE_FORMS[fa].operand, rules::INPLACE_FORMS[fb].operand);
            let head = |n: &CkNode| match &n.head {
                Head::Op { kind, attrs } => Some((*kind, attrs.clone())),
                _ => None,
            };
            (head(x), xo, &x.ty, x.uid, &x.children).cmp(&(head(y), yo, &y.ty, y.uid, &y.children))
        });
        for &(j, i) in &forms {
            // The form allocates nothing: the children's bytes, one deeper.
            let n = &nodes[j];
            let (mut b, mut d) = (0u64, 0u64);
            for &ch in &n.children {
                let (cb, cd) = cost[usize::from(eg.find(ch))].unwrap_or_default();
                b = b.max(cb);
                d = d.max(cd);
            }
            let k = (b, d.saturating_add(1));
            if pick.as_ref().is_none_or(|(pk, _, _)| k < *pk) {
                pick = Some((k, j, Some(i)));
            }
        }
        if let Some((k, j, form)) = pick {
            cost[usize::from(c)] = Some(k);
            let n = &nodes[j];
            best[usize::from(c)] = Some(match (form, &n.head) {
                (Some(i), Head::Op { kind, attrs }) => CkNode {
                    head: Head::InPlace { kind: *kind, attrs: attrs.clone(), n: rules::INPLACE_FORMS[i].operand },
                    ty: n.ty.clone(),
                    uid: n.uid,
                    children: n.children.clone(),
                },
                _ => n.clone(),
            });
        }
    }
    best
}

/// The key of the op's own attributes (`empty` when it has none).
fn attr_key(op: &Op, empty: &Arc<AttrKey>) -> Arc<AttrKey> {
    if op.attrs.keys().all(|k| k.starts_with("ck.")) { empty.clone() } else { AttrKey::new(own_attrs(op)) }
}

/// The op's own attributes: everything but `ck.*` pass attributes.
fn own_attrs(op: &Op) -> Attrs {
    op.attrs.iter().filter(|(k, _)| !k.starts_with("ck.")).map(|(k, v)| (k.clone(), v.clone())).collect()
}

struct Rebuild<'a, G: Classes> {
    eg: &'a G,
    /// Best e-node of each canonical e-class.
    best: &'a [Option<CkNode>],
    /// Canonical e-class → the value that holds it in the new body.
    mat: Vec<Option<ValueId>>,
    body: Vec<Op>,
    pref: Vec<Option<usize>>,
    replaced: usize,
}

impl<G: Classes> Rebuild<'_, G> {
    /// Emits the best e-node of class `c` (after its missing children).
    /// `orig` is the original op whose position this is, if any.
    /// Returns `None` (emitting nothing for `c`) on a cycle or depth limit.
    fn emit(&mut self, f: &mut Func, c: Id, orig: Option<(usize, &Op)>, depth: usize) -> Option<ValueId> {
        if let Some(v) = self.mat[usize::from(c)] {
            return Some(v);
        }
        if depth > 32 {
            return None;
        }
        let node = self.best.get(usize::from(c))?.clone()?;
        let mut kids = Vec::with_capacity(node.children.len());
        for &ch in &node.children {
            let ch = self.eg.find(ch);
            if ch == c {
                return None;
            }
            kids.push(self.emit(f, ch, None, depth + 1)?);
        }
        let (kind, attrs, n) = match &node.head {
            Head::Arg(i) => {
                let v = f.params.get(*i as usize)?.value;
                self.mat[usize::from(c)] = Some(v);
                return Some(v);
            }
            Head::Op { kind, attrs } => (*kind, attrs, None),
            Head::InPlace { kind, attrs, n } => (*kind, attrs, Some(*n as usize)),
        };
        let mut op = match orig {
            // The class's own op: keep its value, location and pass attributes.
            Some((i, o)) if node.uid == i as u32 + 1 => {
                let mut op = o.clone();
                op.operands = kids;
                op.attrs.remove(ATTR_INPLACE);
                op
            }
            _ => {
                let (name, loc) = match orig {
                    Some((_, o)) => (o.result.map(|r| f.name_of(r).to_string()).unwrap_or_default(), o.loc.clone()),
                    None => (String::from("s"), f.loc.clone()),
                };
                let declared = kind.needs_declared_type().then(|| (*node.ty).clone());
                let mut op = f.make_op(kind, &kids, attrs.attrs.clone(), declared, &name, loc).ok()?;
                if op.result.map(|r| f.ty(r) != &*node.ty).unwrap_or(true) {
                    return None;
                }
                if let Some((_, o)) = orig {
                    // Keep user and pass intent (mirror, checkpoint, recompute).
                    for (k, v) in &o.attrs {
                        if k.starts_with("ck.") && k != ATTR_INPLACE && k != ckopt_ir::ops::ATTR_OFFSET {
                            op.attrs.insert(k.clone(), v.clone());
                        }
                    }
                }
                self.replaced += 1;
                op
            }
        };
        op.attrs.remove(ckopt_ir::ops::ATTR_OFFSET);
        let v = op.result?;
        self.mat[usize::from(c)] = Some(v);
        self.body.push(op);
        self.pref.push(n);
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Skipping egg when no algebraic rule fires gives what egg gives: the
    /// same body, preferences and report, on every generated model's
    /// forward and gradient (transformer and gpt have `scale-scale`
    /// rewrites: there egg runs both ways).
    #[test]
    fn flat_translation_matches_egg() {
        let mut flat_used = 0;
        for kind in ckopt_models::ModelKind::ALL {
            let mut m = ckopt_models::generate(kind, &Default::default()).unwrap_or_else(|e| panic!("{e}"));
            let mut pm = crate::manager::PassManager::parse("autodiff").unwrap_or_else(|e| panic!("{e}"));
            pm.run(&mut m).unwrap_or_else(|e| panic!("{e}"));
            for f in &m.funcs {
                let (mut a, mut b) = (f.clone(), f.clone());
                let (pa, ra) = simplify(&mut a, Limits::default(), true);
                let (pb, rb) = simplify(&mut b, Limits::default(), false);
                assert_eq!(a, b, "{kind:?} @{}", f.name);
                assert_eq!(pa, pb, "{kind:?} @{}", f.name);
                assert_eq!(format!("{ra:?}"), format!("{rb:?}"), "{kind:?} @{}", f.name);
                flat_used += usize::from(ra.applied.iter().all(|(k, _)| !k.contains("scale-scale")));
            }
        }
        assert!(flat_used > 0);
    }
}
