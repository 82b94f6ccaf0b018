"""What a profile holds: FunctionEvent per timed range, EventList, key_averages and PyTorch's table.

The attributes and the table mirror ``torch.autograd.profiler_util`` (column names, number formats,
sort keys), so code that reads ``prof.key_averages().table(sort_by="cpu_time_total")`` or
``evt.self_cpu_time_total`` works unchanged. Times are in microseconds.
"""
import enum
import math


class DeviceType(enum.Enum):
    """Where an event ran (PyTorch's torch.profiler.DeviceType; workbench has CPU and CUDA events)."""

    CPU = 0
    CUDA = 1


def _format_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_share(us, total):
    return "NaN" if total == 0 else f"{us * 100.0 / total:.2f}%"


def _format_memory(nbytes):
    for unit, size in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("KB", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


class _Times:
    """The formatted-time properties PyTorch's events have (``cpu_time_total_str``...)."""

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    cuda_time = device_time

    @property
    def cuda_time_total(self):
        return self.device_time_total

    @property
    def self_cuda_time_total(self):
        return self.self_device_time_total

    @property
    def self_cuda_memory_usage(self):
        return self.self_device_memory_usage

    cpu_time_str = property(lambda self: _format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: _format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: _format_time(self.self_cpu_time_total))
    device_time_str = property(lambda self: _format_time(self.device_time))
    device_time_total_str = property(lambda self: _format_time(self.device_time_total))
    self_device_time_total_str = property(lambda self: _format_time(self.self_device_time_total))


class FunctionEvent(_Times):
    """One timed range: an op's forward, a backward step, a record_function block, a module call.

    ``kind`` says which ("op", "backward", "user", "module", "step"); ``lane`` 0 is the forward (the
    caller's thread), 1 the backward engine's steps. ``node`` is the autograd node an op recorded (or
    a backward step ran), when there is one.

    >>> import workbench as wb
    >>> with wb.profiler.profile() as prof:
    ...     y = wb.ones(3).exp()
    >>> e = prof.events()[0]; e.name, e.count, e.cpu_time_total >= e.self_cpu_time_total
    ('exp', 1, True)
    """

    is_async = False
    is_legacy = False
    is_remote = False
    node_id = -1
    overload_name = ""
    count = 1
    device_type = DeviceType.CPU  # every event is a host range; device time is attached to it

    def __init__(self, id, r, use_device):
        self.id = id
        self.name = r.name
        self.kind = r.kind
        self.lane = r.lane
        self.thread = r.lane
        self.time_range = (r.start / 1000.0, r.end / 1000.0)
        self.input_shapes = r.shapes
        self.stack = r.stack or []
        self.flops = r.flops or 0
        self.scope = r.scope
        self.step = r.step
        self.node = r.node
        self.cpu_memory_usage = r.mem
        self.device_memory_usage = r.dev_mem
        self.device_time_total = r.device_us
        self.device_start = r.device_start
        self.use_device = use_device
        self.is_user_annotation = r.kind == "user"
        self.cpu_children = []
        self.cpu_parent = None
        self.range_parent = None  # the enclosing range, module calls included (the timeline's nesting)

    @property
    def key(self):
        return self.name

    @property
    def start_us(self):
        return self.time_range[0]

    @property
    def cpu_time_total(self):
        return self.time_range[1] - self.time_range[0]

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_device_time_total(self):
        return max(0.0, self.device_time_total - sum(c.device_time_total for c in self.cpu_children))

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self):
        return self.device_memory_usage - sum(c.device_memory_usage for c in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_total_str} "
                f"self_cpu_time={self.self_cpu_time_total_str} input_shapes={self.input_shapes}>")


class FunctionEventAvg(_Times):
    """The events of one key (name, and input shapes when grouped by them) added up."""

    is_async = False
    is_legacy = False
    is_remote = False
    node_id = -1
    overload_name = ""

    def __init__(self, key, input_shapes, stack, use_device):
        self.key = key
        self.input_shapes = input_shapes
        self.stack = stack
        self.use_device = use_device
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.device_time_total = self.self_device_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.flops = 0
        self.is_user_annotation = False
        self.cpu_parent = None

    def add(self, e):
        self.count += e.count
        self.cpu_time_total += e.cpu_time_total
        self.self_cpu_time_total += e.self_cpu_time_total
        self.device_time_total += e.device_time_total
        self.self_device_time_total += e.self_device_time_total
        self.cpu_memory_usage += e.cpu_memory_usage
        self.self_cpu_memory_usage += e.self_cpu_memory_usage
        self.device_memory_usage += e.device_memory_usage
        self.self_device_memory_usage += e.self_device_memory_usage
        self.flops += e.flops
        self.is_user_annotation = e.is_user_annotation
        return self

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events (FunctionEvent, or FunctionEventAvg from key_averages) with PyTorch's helpers."""

    def __init__(self, events=(), use_device=None, profile_memory=False, with_flops=False):
        super().__init__(events)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops

    @property
    def self_cpu_time_total(self):
        """Sum of every event's self CPU time (us): the table's footer."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """One FunctionEventAvg per op name (and input shapes, and top stack frames, when asked).

        Module-call ranges are left out, as in PyTorch's table; profiler steps are averaged as
        ``ProfilerStep*``.
        """
        groups = {}
        for e in self:
            if e.kind == "module":
                continue
            name = "ProfilerStep*" if e.kind == "step" else e.name
            shapes = e.input_shapes if group_by_input_shape else None
            stack = tuple(e.stack[:group_by_stack_n]) if group_by_stack_n else ()
            key = (name, str(shapes) if group_by_input_shape else None, stack)
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg(name, shapes if group_by_input_shape else None,
                                                     list(stack), self._use_device)
            avg.add(e)
        return EventList(groups.values(), self._use_device, self._profile_memory, self._with_flops)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """The text table PyTorch prints, with its column names (see ``_build_table``)."""
        return _build_table(self, sort_by, header, row_limit, max_src_column_width, max_name_column_width,
                            max_shapes_column_width, self._with_flops, self._profile_memory,
                            top_level_events_only, time_unit)

    def total_average(self):
        """Every event added into one FunctionEventAvg keyed "Total"."""
        total = FunctionEventAvg("Total", None, [], self._use_device)
        for e in self:
            total.add(e)
        return total

    def __str__(self):
        return self.table()


def _scaled(us, default, unit):
    if unit == "s":
        return f"{us / 1e6:.3f}s"
    if unit == "ms":
        return f"{us / 1e3:.3f}ms"
    if unit == "us":
        return f"{us:.3f}us"
    return default


def _flops_scale(flops):
    units = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
    k = int(max(0, min(math.log10(flops) / 3, len(units) - 1)))
    return 10.0 ** (-3 * k), units[k]


def _build_table(events, sort_by, header, row_limit, max_src_column_width, max_name_column_width,
                 max_shapes_column_width, with_flops, profile_memory, top_level_events_only, time_unit):
    # PyTorch's layout: a name column, 12-wide value columns, two spaces between, dashes around the header
    if not events:
        return ""
    use_device = events._use_device
    dev = (use_device or "cuda").upper()
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_mem = any(e.self_device_memory_usage > 0 for e in events)
    has_shapes = any(e.input_shapes for e in events)
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device")
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    name_w = min(max(len(e.key) for e in events) + 4, max_name_column_width or 10 ** 9)
    shapes_w = min(max(len(str(e.input_shapes)) for e in events) + 4, max_shapes_column_width or 10 ** 9)
    stacks = [e.stack for e in events if e.stack]
    src_w = min(max(len(s) for st in stacks for s in st) + 4, max_src_column_width or 10 ** 9) if stacks else 0

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if has_device_time:
        headers += [f"Self {dev}", f"Self {dev} %", f"{dev} total", f"{dev} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if has_device_mem:
            headers += [f"{dev} Mem", f"Self {dev} Mem"]
    headers.append("# of Calls")
    widths = [name_w] + [12] * (len(headers) - 1)
    aligns = [">"] * len(headers)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_w)
        aligns.append(">")
    if stacks:
        headers.append("Source Location")
        widths.append(src_w)
        aligns.append("<")
    flops_scale = None
    if with_flops:
        raw = [e.flops for e in events if e.flops > 0]
        if raw:
            flops_scale, unit = _flops_scale(min(raw))
            headers.append(f"Total {unit}")
            widths.append(12)
            aligns.append(">")
    row_format = "".join("{: " + a + str(w) + "}  " for a, w in zip(aligns, widths))
    sep = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2

    total_cpu = sum(e.self_cpu_time_total for e in events)
    total_dev = sum(e.self_device_time_total for e in events)
    out = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_events_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [sep, row_format.format(*headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, _format_share(e.self_cpu_time_total, total_cpu),
               _scaled(e.self_cpu_time_total, e.self_cpu_time_total_str, time_unit),
               _format_share(e.cpu_time_total, total_cpu),
               _scaled(e.cpu_time_total, e.cpu_time_total_str, time_unit),
               _scaled(e.cpu_time, e.cpu_time_str, time_unit)]
        if has_device_time:
            row += [_scaled(e.self_device_time_total, e.self_device_time_total_str, time_unit),
                    _format_share(e.self_device_time_total, total_dev),
                    _scaled(e.device_time_total, e.device_time_total_str, time_unit),
                    _scaled(e.device_time, e.device_time_str, time_unit)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
            if has_device_mem:
                row += [_format_memory(e.device_memory_usage), _format_memory(e.self_device_memory_usage)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_w])
        if stacks:
            src = e.stack[0] if e.stack else ""
            if len(src) > src_w:
                src = "..." + src[len(src) - src_w + 3:]
            row.append(src)
        if flops_scale is not None:
            row.append(f"{e.flops * flops_scale:8.3f}" if e.flops > 0 else "--")
        out.append(row_format.format(*row))
    out.append(sep)
    out.append(f"Self CPU time total: {_scaled(total_cpu, _format_time(total_cpu), time_unit)}")
    if has_device_time:
        out.append(f"Self {dev} time total: {_scaled(total_dev, _format_time(total_dev), time_unit)}")
    return "\n".join(out) + "\n"
