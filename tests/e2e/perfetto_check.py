#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""perfetto_check.py TRACE: a Perfetto trace decoded with the official schema (the PyPI perfetto
package's perfetto_trace_pb2, in the tests' venv), checked, and printed back as JSON rows.

Checks: the file parses as a Trace; every interned id an event uses was defined on its sequence
since the last SEQ_INCREMENTAL_STATE_CLEARED; every event's track was described before; a thread
track's parent is its process's track, a counter track's parent a process track; every
SLICE_END closes a SLICE_BEGIN of its track (an event without track_uuid is on its sequence's
TrackEventDefaults track). A named track whose parent is a process's is an async range's (the
JSON's b/e, an NVTX start/end range): its slice comes back as rows b and e. An annotation named
"args" whose value is a JSON object's text is a row's args packed as one (interned): read back
into the row's args. Flow ids on a slice are record's "ac2g" flows (rows s/f after the slice's).
A track named "GPU N" (no parent) is device N, its children "stream S" the device's streams:
rows there have pid N, tid S, as in the JSON. Rows come back in the JSON's terms: ph X (begin
and end paired, dur in ns), I (an instant), C, s/f (flows), with name, cat, pid, tid, ts (ns),
args and stack (innermost frame first, as the JSON's args.stack)."""
import json
import re
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
TE = pb.TrackEvent
PACKED = "args"  # perfetto_trace.c's PACKED_NAME
FLOW = "ac2g"  # name and category of record's flows: ids on the slices they link


class Seq:
    def __init__(self):
        self.clear()
        self.clocks = {}
        self.default_clock = None
        self.default_track = None

    def clear(self):
        self.names, self.cats, self.arg_names, self.strings = {}, {}, {}, {}
        self.funcs, self.frames, self.stacks = {}, {}, {}


def fail(errors, what):
    if len(errors) < 20:
        errors.append(what)


def intern(seq, data):
    for e in data.event_names:
        seq.names[e.iid] = e.name
    for e in data.event_categories:
        seq.cats[e.iid] = e.name
    for e in data.debug_annotation_names:
        seq.arg_names[e.iid] = e.name
    for e in data.debug_annotation_string_values:
        seq.strings[e.iid] = e.str.decode()
    for e in data.function_names:
        seq.funcs[e.iid] = e.str.decode()
    for e in data.frames:
        seq.frames[e.iid] = e.function_name_id
    for e in data.callstacks:
        seq.stacks[e.iid] = list(e.frame_ids)


def value(seq, a, errors):
    kind = a.WhichOneof("value")
    if a.array_values:
        return [value(seq, v, errors) for v in a.array_values]
    if a.dict_entries:
        return {name(seq, v, errors): value(seq, v, errors) for v in a.dict_entries}
    if kind == "string_value_iid":
        if a.string_value_iid not in seq.strings:
            fail(errors, f"string iid {a.string_value_iid} undefined")
        return seq.strings.get(a.string_value_iid)
    if kind == "legacy_json_value":
        return json.loads(a.legacy_json_value)
    return getattr(a, kind) if kind else None


def name(seq, a, errors):
    if a.HasField("name_iid"):
        if a.name_iid not in seq.arg_names:
            fail(errors, f"annotation name iid {a.name_iid} undefined")
        return seq.arg_names.get(a.name_iid)
    return a.name


def stack(seq, iid, errors):
    frames = seq.stacks.get(iid)
    if frames is None:
        fail(errors, f"callstack iid {iid} undefined")
        return []
    out = []
    for f in frames:
        if f not in seq.frames or seq.frames[f] not in seq.funcs:
            fail(errors, f"frame {f} undefined")
        out.append(seq.funcs.get(seq.frames.get(f)))
    return out[::-1]


def timestamp(seq, p, errors):
    clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else seq.default_clock
    if clock is None or clock < 64:
        return p.timestamp
    if clock not in seq.clocks:
        fail(errors, f"clock {clock} undefined")
        return p.timestamp
    seq.clocks[clock] += p.timestamp
    return seq.clocks[clock]


def event_row(seq, track, p, ts, errors):
    te = p.track_event
    row = {"ts": ts, "pid": track.get("pid"), "tid": track.get("tid")}
    if te.HasField("name_iid"):
        if te.name_iid not in seq.names:
            fail(errors, f"name iid {te.name_iid} undefined")
        row["name"] = seq.names.get(te.name_iid)
    elif te.HasField("name"):
        row["name"] = te.name
    for c in te.category_iids:
        if c not in seq.cats:
            fail(errors, f"category iid {c} undefined")
        row["cat"] = seq.cats.get(c)
    row["args"] = {}
    for a in te.debug_annotations:
        k, v = name(seq, a, errors), value(seq, a, errors)
        if k == PACKED and isinstance(v, str) and v.startswith("{"):
            row["args"].update(json.loads(v))  # a row's args, packed as one
        else:
            row["args"][k] = v
    if te.HasField("callstack_iid"):
        row["stack"] = stack(seq, te.callstack_iid, errors)
    return row


def main(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    errors, rows, seqs, tracks, open_slices = [], [], {}, {}, {}
    for p in trace.packet:
        seq = seqs.setdefault(p.trusted_packet_sequence_id, Seq())
        if p.sequence_flags & CLEARED:
            seq.clear()
        if p.HasField("clock_snapshot"):
            for c in p.clock_snapshot.clocks:
                if c.clock_id >= 64:
                    seq.clocks[c.clock_id] = c.timestamp
        if p.HasField("trace_packet_defaults"):
            d = p.trace_packet_defaults
            seq.default_clock = d.timestamp_clock_id
            seq.default_track = d.track_event_defaults.track_uuid \
                if d.HasField("track_event_defaults") else None
        intern(seq, p.interned_data)
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            t = {"uuid": d.uuid, "parent": d.parent_uuid, "name": d.name}
            if d.HasField("process"):
                t.update(kind="process", pid=d.process.pid, name=d.process.process_name)
            elif d.HasField("thread"):
                t.update(kind="thread", pid=d.thread.pid, tid=d.thread.tid,
                         name=d.thread.thread_name)
                parent = tracks.get(d.parent_uuid, {})
                if parent.get("kind") != "process" or parent.get("pid") != d.thread.pid:
                    fail(errors, f"thread track {d.uuid}: parent {parent}")
            elif d.HasField("counter"):
                t.update(kind="counter", pid=tracks.get(d.parent_uuid, {}).get("pid"))
                if tracks.get(d.parent_uuid, {}).get("kind") != "process":
                    fail(errors, f"counter track {d.uuid}: no process parent")
            elif d.HasField("parent_uuid") and tracks.get(d.parent_uuid, {}).get("kind") \
                    == "device":
                m = re.fullmatch(r"stream (\d+)", d.name)
                t.update(kind="stream", pid=tracks[d.parent_uuid]["pid"],
                         tid=int(m.group(1)) if m else None)
                if not m:
                    fail(errors, f"stream track {d.uuid} named {d.name!r}")
            elif d.HasField("parent_uuid") and tracks.get(d.parent_uuid, {}).get("kind") \
                    == "process":
                t.update(kind="async", pid=tracks[d.parent_uuid]["pid"])  # a b/e range's
            elif re.fullmatch(r"GPU \d+", d.name) and not d.HasField("parent_uuid"):
                t.update(kind="device", pid=int(d.name[4:]))
            else:
                t.update(kind="global")
            old = tracks.get(d.uuid)
            if old and (old["kind"], old.get("pid"), old.get("tid")) != \
                    (t["kind"], t.get("pid"), t.get("tid")):
                fail(errors, f"track {d.uuid} described twice differently")
            tracks[d.uuid] = t
        if not p.HasField("track_event"):
            continue
        ts = timestamp(seq, p, errors)
        te = p.track_event
        uuid = te.track_uuid if te.HasField("track_uuid") else seq.default_track
        track = tracks.get(uuid)
        if track is None:
            fail(errors, f"event on undescribed track {uuid}")
            continue
        if te.type == TE.TYPE_SLICE_END:
            stack_ = open_slices.get(uuid)
            if not stack_:
                fail(errors, f"slice end without begin on track {uuid}")
                continue
            row = stack_.pop()
            row["dur"] = ts - row["ts"]
            if track["kind"] == "async":
                rows.append({"ph": "e", "name": row.get("name"), "cat": row.get("cat"),
                             "pid": track["pid"], "tid": None, "ts": ts, "args": {}})
            continue
        row = event_row(seq, track, p, ts, errors)
        if te.type in (TE.TYPE_SLICE_BEGIN, TE.TYPE_INSTANT) and row.get("name") != FLOW:
            # flow ids on a slice: the flow rows the JSON has after it, of record's "ac2g"
            for ids, ph in ((te.flow_ids, "s"), (te.terminating_flow_ids, "f")):
                rows += [{"ph": ph, "name": FLOW, "cat": FLOW, "id": i, "ts": ts,
                          "pid": row["pid"], "tid": row["tid"], "args": {},
                          "on_slice": True} for i in ids]
        if te.type == TE.TYPE_SLICE_BEGIN:
            row["ph"] = "b" if track["kind"] == "async" else "X"
            open_slices.setdefault(uuid, []).append(row)
        elif te.type == TE.TYPE_COUNTER:
            row.update(ph="C", name=track["name"], pid=track["pid"],
                       value=te.counter_value if te.HasField("counter_value")
                       else te.double_counter_value)
        elif (te.flow_ids or te.terminating_flow_ids) and row.get("name") == FLOW:
            row.update(ph="f" if te.terminating_flow_ids else "s",
                       id=(list(te.terminating_flow_ids) or list(te.flow_ids))[0])
        elif te.type == TE.TYPE_INSTANT:
            row["ph"] = "I"
        else:
            fail(errors, f"event type {te.type}")
        rows.append(row)
    for uuid, left in open_slices.items():
        if left:
            fail(errors, f"{len(left)} slices left open on track {uuid}")
    json.dump({"packets": len(trace.packet), "errors": errors, "rows": rows,
               "tracks": list(tracks.values())}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
