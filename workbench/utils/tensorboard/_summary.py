"""Summary protocol buffers (TensorBoard's own message classes) for scalars, histograms, images, text, hparams."""
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.hparams import api_pb2, metadata as hp_metadata, plugin_data_pb2
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ... import _backend
from ...tensor import Tensor
from . import _png

np = _backend.numpy


def to_numpy(x, what):
    """A host NumPy array of a tensor, array, number or list (the values a summary is made of)."""
    if isinstance(x, Tensor):
        x = x.detach()
        if x.dtype.name == "bfloat16":
            x = x.float()
        return _backend.to_device(x._data, _backend.CPU)
    if isinstance(x, (np.ndarray, np.generic, int, float, bool, list, tuple)):
        return np.asarray(x)
    raise TypeError(f"{what}: expected a tensor, a NumPy array or a number, got {type(x).__name__}")


def scalar(tag, value, new_style=False, double_precision=False):
    arr = to_numpy(value, "add_scalar").squeeze()
    if arr.ndim != 0:
        raise ValueError(f"add_scalar({tag!r}): the value must have one element, got shape {list(arr.shape)}")
    v = float(arr)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=v)])
    proto = TensorProto(double_val=[v], dtype="DT_DOUBLE") if double_precision else TensorProto(float_val=[v],
                                                                                               dtype="DT_FLOAT")
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=meta)])


def default_bins():
    """TensorFlow's bucket edges: +-1e-12 growing by 10% up to 1e20, and 0 (what PyTorch's 'tensorflow' means)."""
    pos = np.cumprod(np.concatenate([[1e-12], np.full(800, 1.1)]))  # the same products as v *= 1.1
    pos = pos[pos < 1e20]
    return np.concatenate([-pos[::-1], [0.0], pos])


def histogram_proto(values, bins, max_bins=None):
    values = values.reshape(-1).astype(np.float64)
    if values.size == 0:
        raise ValueError("The input has no element.")
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:  # merge neighbouring bins, max_bins at most
        group = -(-len(counts) // max_bins)
        counts = np.pad(counts, (0, -len(counts) % group)).reshape(-1, group).sum(axis=1)
        limits = np.append(limits[:-1:group], limits[-1])
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:
        raise ValueError("The histogram is empty: no value falls inside the bins")
    first, last = nonzero[0], nonzero[-1]
    # TensorBoard reads bucket i as (limit[i-1], limit[i]]: keep the populated span, with the empty
    # bucket below it, as TensorFlow writes them
    counts = np.concatenate([[0], counts[first:last + 1]]) if first == 0 else counts[first - 1:last + 1]
    limits = limits[first:last + 2]
    return HistogramProto(min=float(values.min()), max=float(values.max()), num=int(values.size),
                          sum=float(values.sum()), sum_squares=float(values.dot(values)),
                          bucket_limit=limits.tolist(), bucket=counts.tolist())


def histogram(tag, values, bins, max_bins=None):
    return Summary(value=[Summary.Value(tag=tag, histo=histogram_proto(to_numpy(values, "add_histogram"), bins,
                                                                        max_bins))])


def _grid(nchw, ncols=8):
    n, c, h, w = nchw.shape
    if c == 1:
        nchw = np.repeat(nchw, 3, axis=1)
    elif c != 3:
        raise ValueError(f"add_images: a batch of images needs 1 or 3 channels, got {c}")
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    canvas = np.zeros((3, h * nrows, w * ncols), nchw.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = nchw[i]
    return canvas


def to_hwc(arr, dataformats):
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt) or len(fmt) != arr.ndim or set(fmt) - set("NCHW"):
        raise ValueError(f"add_image: dataformats {dataformats!r} does not describe an image of shape "
                         f"{list(arr.shape)} (use letters from N, C, H, W, one per dimension)")
    if len(fmt) == 4:
        return _grid(arr.transpose([fmt.index(c) for c in "NCHW"])).transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = arr.transpose([fmt.index(c) for c in "HWC"])
        return np.repeat(hwc, 3, axis=2) if hwc.shape[2] == 1 else hwc
    return np.stack([arr.transpose([fmt.index(c) for c in "HW"])] * 3, axis=2)


def image(tag, img, dataformats="CHW"):
    """An image summary: floats are taken as [0, 1] and scaled to 0..255, uint8 as they are."""
    arr = to_hwc(to_numpy(img, "add_image"), dataformats)
    scale = 1 if arr.dtype == np.uint8 else 255
    pixels = (arr.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    h, w, c = pixels.shape
    return Summary(value=[Summary.Value(tag=tag, image=Summary.Image(height=h, width=w, colorspace=c,
                                                                     encoded_image_string=_png.encode(pixels)))])


def text(tag, string):
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    proto = TensorProto(dtype="DT_STRING", string_val=[string.encode("utf-8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=proto)])


def _hp_summary(tag, **content):
    data = plugin_data_pb2.HParamsPluginData(version=hp_metadata.PLUGIN_DATA_VERSION, **content)
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=hp_metadata.PLUGIN_NAME,
                                                                  content=data.SerializeToString()))
    return Summary(value=[Summary.Value(tag=tag, metadata=meta)])


def hparams(hparam_dict, metric_dict, hparam_domain_discrete=None):
    """The experiment, session-start and session-end summaries of the hparams plugin."""
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in domains.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")
    start = plugin_data_pb2.SessionStartInfo()
    infos = []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, Tensor):
            v = float(to_numpy(v, "add_hparams").reshape(-1)[0])
        if isinstance(v, bool):
            start.hparams[k].bool_value, kind, field = v, "DATA_TYPE_BOOL", "bool_value"
        elif isinstance(v, (int, float)):
            start.hparams[k].number_value, kind, field = v, "DATA_TYPE_FLOAT64", "number_value"
        elif isinstance(v, str):
            start.hparams[k].string_value, kind, field = v, "DATA_TYPE_STRING", "string_value"
        else:
            raise ValueError("value should be one of int, float, str, bool, or workbench.Tensor")
        discrete = (struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in domains[k]])
                    if k in domains else None)
        infos.append(api_pb2.HParamInfo(name=k, type=api_pb2.DataType.Value(kind), domain_discrete=discrete))
    experiment = api_pb2.Experiment(hparam_infos=infos,
                                    metric_infos=[api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k))
                                                  for k in metric_dict])
    end = plugin_data_pb2.SessionEndInfo(status=api_pb2.Status.Value("STATUS_SUCCESS"))
    return (_hp_summary(hp_metadata.EXPERIMENT_TAG, experiment=experiment),
            _hp_summary(hp_metadata.SESSION_START_INFO_TAG, session_start_info=start),
            _hp_summary(hp_metadata.SESSION_END_INFO_TAG, session_end_info=end))
