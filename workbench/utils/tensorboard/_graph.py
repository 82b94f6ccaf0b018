"""``add_graph``: the model's recorded tape as a TensorBoard GraphDef (ops grouped by module scope)."""
from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from ...autograd import graph as _graph
from ...tensor import Tensor


def _shape_attr(tensors):
    shapes = [TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(n)) for n in t.shape]) for t in tensors]
    return {"_output_shapes": AttrValue(list=AttrValue.ListValue(shape=shapes))}


def _flat(x):
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _flat(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _flat(v)]
    return []


def graph_def(model, inputs):
    """Run ``model(*inputs)`` once, recording every op, and describe what ran as a GraphDef.

    Node names are ``<module scope>/<op>_<n>`` (the scope's dots become TensorBoard's groups), inputs
    ``input/input.<i>``, outputs ``output/output.<i>``, parameters their dotted path; every node carries
    its output shapes.
    """
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    inputs = tuple(t.detach().requires_grad_(True) if isinstance(t, Tensor) and t.is_floating_point() else t
                   for t in (inputs or ()))
    records = []
    with _graph.add_listener(lambda node, args, results: records.append((node, args, results))):
        out = model(*inputs)
    names, nodes = {}, []
    for i, t in enumerate(t for t in inputs if isinstance(t, Tensor)):
        names[id(t)] = f"input/input.{i}"
        nodes.append(NodeDef(name=names[id(t)], op="IO Node", attr=_shape_attr([t])))
    for path, p in list(model.named_parameters()) + list(model.named_buffers()):
        names[id(p)] = path.replace(".", "/")
        nodes.append(NodeDef(name=names[id(p)], op="Parameter", attr=_shape_attr([p])))
    counts = {}
    for node, args, results in records:
        op = node._op or node.name()
        k = counts[op] = counts.get(op, -1) + 1
        name = "/".join(filter(None, [(node.scope or "").replace(".", "/"), f"{op}_{k}"]))
        ins = []
        for t in _flat(list(args)):
            if id(t) not in names:
                names[id(t)] = f"constant/constant_{len(names)}"
                nodes.append(NodeDef(name=names[id(t)], op="Constant", attr=_shape_attr([t])))
            ins.append(names[id(t)])
        outs = [r for r in results if isinstance(r, Tensor)]
        for r in outs:
            names[id(r)] = name
        nodes.append(NodeDef(name=name, op=op, input=ins, attr=_shape_attr(outs)))
    for i, t in enumerate(_flat(out)):
        nodes.append(NodeDef(name=f"output/output.{i}", op="IO Node", input=[names.get(id(t), "input/input.0")],
                             attr=_shape_attr([t])))
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
