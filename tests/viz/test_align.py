"""The node alignment rule (workbench/viz/align.py) that compare and the step slider share."""
import workbench as wb
from workbench.viz.align import match, node_keys

nn = wb.nn


def _snap(net, x, model=True):
    loss = (net(x) ** 2).mean()
    loss.backward()
    return wb.viz.snapshot(loss, net if model else None).to_dict()


def _mlp(*sizes, seed=0):
    wb.manual_seed(seed)
    layers = []
    for i, o in zip(sizes, sizes[1:]):
        layers += [nn.Linear(i, o), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def test_same_model_two_steps_match_node_for_node():
    net, x = _mlp(3, 4, 2), wb.randn(5, 3)
    opt = wb.optim.SGD(net.parameters(), lr=0.1)
    a = _snap(net, x)
    opt.step()
    opt.zero_grad()
    b = _snap(net, x)
    assert node_keys(a) == node_keys(b)
    assert match(a, b) == {n["id"]: n["id"] for n in a["nodes"]}
    keys = node_keys(a)
    assert len(set(keys)) == len(keys)
    assert {"param|0.weight|0", "0#0|linear|0", "1#0|relu|0", "2#0|linear|0"} <= set(keys)


def test_extra_layer_adds_only_its_own_nodes():
    x = wb.randn(5, 3)
    a = _snap(_mlp(3, 4, 2), x)
    b = _snap(_mlp(3, 4, 4, 2), x)
    m = match(a, b)
    ka, kb = node_keys(a), node_keys(b)
    added = {k for k in kb if k not in set(ka)}
    # layers 0, 1 are the same modules; 2 changed shape but is still a Linear at path "2"; 3 and 4 are new
    assert added and all(k.startswith(("3#", "4#", "param|4.")) for k in added), added
    removed = [n["id"] for n in a["nodes"] if n["id"] not in m]
    assert removed == []
    assert node_keys(a)[-1] == node_keys(b)[-1] == "|mean|0"


def test_calls_are_numbered_per_path_and_groups_per_scope():
    lin = nn.Linear(2, 2)

    def run():
        x = wb.ones(1, 2)
        with wb.viz.record():
            loss = wb.nanmean(lin(lin(x))) + wb.nanmean(lin(x))  # nanmean: a composite (a group)
        return wb.viz.snapshot(loss, lin).to_dict()

    a, b = run(), run()  # the global call and group counters moved on between the two
    assert [n.get("group") for n in a["nodes"]] != [n.get("group") for n in b["nodes"]]
    assert node_keys(a) == node_keys(b)
    keys = node_keys(a)
    # a root module has no path, so the calls told apart are those of nanmean's group in the top scope
    assert any(k.startswith("/nanmean#1|") for k in keys) and any(k.startswith("/nanmean#0|") for k in keys)


def test_nested_calls_counted_within_parent_call():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            return self.fc(self.fc(x))

    net = nn.Sequential(Block())
    x = wb.ones(1, 2, requires_grad=True)
    loss = (net(net(x))).sum()
    keys = node_keys(wb.viz.snapshot(loss, net).to_dict())
    scopes = {k.split("|")[0] for k in keys if not k.startswith(("param|", "leaf|"))}
    assert {"0#0.fc#0", "0#0.fc#1", "0#1.fc#0", "0#1.fc#1"} <= scopes, scopes


def test_an_extra_op_shifts_only_later_ops_of_its_name_in_its_scope():
    w = wb.tensor([1.0, 2.0], requires_grad=True)
    a = wb.viz.snapshot(((w * 2).exp() * 3).sum(), names={"w": w}).to_dict()
    b = wb.viz.snapshot(((w * 2).exp().sin() * 3).sum(), names={"w": w}).to_dict()
    ka, kb = node_keys(a), node_keys(b)
    assert ka == ["leaf||w|0", "|mul|0", "|exp|0", "|mul|1", "|sum|0"]
    assert set(kb) - set(ka) == {"|sin|0"}
    assert len(match(a, b)) == len(ka)
    c = wb.viz.snapshot(((w * 2 * 5).exp() * 3).sum(), names={"w": w}).to_dict()
    m = match(a, c)  # the extra mul takes "|mul|1": the later mul becomes "|mul|2"; exp and sum keep theirs
    assert node_keys(c) == ["leaf||w|0", "|mul|0", "|mul|1", "|exp|0", "|mul|2", "|sum|0"]
    assert m == {"n0": "n0", "n1": "n1", "n2": "n3", "n3": "n2", "n4": "n5"}


def test_unnamed_leaves_do_not_carry_their_position():
    def snap(extra):
        t = [wb.ones(2, requires_grad=True) for _ in range(3)]
        y = t[0] * t[1]
        if extra:
            y = y + t[2]
        return wb.viz.snapshot(y.sum(), names={}).to_dict()

    assert all(k.startswith(("leaf||", "|")) for k in node_keys(snap(False)) if k.startswith("leaf"))
