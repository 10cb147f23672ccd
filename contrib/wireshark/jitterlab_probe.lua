-- Wireshark dissector for jitterlab's probe packet, version 1 (docs/probe-format.md).
--
-- Install: copy this file into Wireshark's personal Lua plugins folder (Help → About
-- Wireshark → Folders → "Personal Lua Plugins", e.g. ~/.local/lib/wireshark/plugins/ on
-- Linux, %APPDATA%\Wireshark\plugins\ on Windows) and restart Wireshark, or load it once:
--     tshark -X lua_script:contrib/wireshark/jitterlab_probe.lua -r trace.pcapng
--
-- Probe packets are recognised on any UDP port by their first bytes (magic "JLPR",
-- version 1: a heuristic dissector, on by default); "Decode As… → JITTERLAB_PROBE" (or
-- tshark's -d udp.port==PORT,jitterlab_probe) forces it on a port.
--
-- Fields (display filter names), all big-endian on the wire:
--   jitterlab_probe.version     u8    format version (1)
--   jitterlab_probe.lifecycle   u8    0, or one of spawn (1), despawn (2), teleport (4)
--   jitterlab_probe.count       u16   number of values
--   jitterlab_probe.stream      u32   entity or stream id
--   jitterlab_probe.tick        u64   sequence number (+1 per snapshot)
--   jitterlab_probe.send_ns     i64   send time, ns on the sender's clock
--   jitterlab_probe.state       u32   discrete state
--   jitterlab_probe.value       f64   each value, in order (repeated)
-- A packet that looks like a probe but is malformed (short, value count beyond the packet)
-- is marked with an expert error, as jitterlab's decoder refuses it.

local probe = Proto("jitterlab_probe", "jitterlab probe snapshot")

local lifecycle_names = { [0] = "none", [1] = "spawn", [2] = "despawn", [4] = "teleport" }

local f = {
    magic = ProtoField.string("jitterlab_probe.magic", "Magic"),
    version = ProtoField.uint8("jitterlab_probe.version", "Version"),
    lifecycle = ProtoField.uint8("jitterlab_probe.lifecycle", "Lifecycle", base.HEX, lifecycle_names),
    spawn = ProtoField.bool("jitterlab_probe.lifecycle.spawn", "Spawn", 8, nil, 0x01),
    despawn = ProtoField.bool("jitterlab_probe.lifecycle.despawn", "Despawn", 8, nil, 0x02),
    teleport = ProtoField.bool("jitterlab_probe.lifecycle.teleport", "Teleport", 8, nil, 0x04),
    count = ProtoField.uint16("jitterlab_probe.count", "Values"),
    stream = ProtoField.uint32("jitterlab_probe.stream", "Stream"),
    tick = ProtoField.uint64("jitterlab_probe.tick", "Tick (sequence)"),
    send_ns = ProtoField.int64("jitterlab_probe.send_ns", "Send time (ns, sender clock)"),
    state = ProtoField.uint32("jitterlab_probe.state", "State"),
    value = ProtoField.double("jitterlab_probe.value", "Value"),
}
probe.fields = f

local malformed = ProtoExpert.new("jitterlab_probe.malformed", "Malformed probe packet",
    expert.group.MALFORMED, expert.severity.ERROR)
probe.experts = { malformed }

local HEADER_LEN = 32

local function looks_like_probe(tvb)
    return tvb:len() >= 5 and tvb(0, 4):string() == "JLPR" and tvb(4, 1):uint() == 1
end

function probe.dissector(tvb, pinfo, tree)
    if not looks_like_probe(tvb) then
        return 0
    end
    pinfo.cols.protocol = "JLPROBE"
    local t = tree:add(probe, tvb())
    t:add(f.magic, tvb(0, 4))
    t:add(f.version, tvb(4, 1))
    if tvb:len() < HEADER_LEN then
        t:add_proto_expert_info(malformed, "shorter than the 32-byte header")
        return tvb:len()
    end
    local lc = t:add(f.lifecycle, tvb(5, 1))
    lc:add(f.spawn, tvb(5, 1))
    lc:add(f.despawn, tvb(5, 1))
    lc:add(f.teleport, tvb(5, 1))
    local n = tvb(6, 2):uint()
    t:add(f.count, tvb(6, 2))
    t:add(f.stream, tvb(8, 4))
    t:add(f.tick, tvb(12, 8))
    t:add(f.send_ns, tvb(20, 8))
    t:add(f.state, tvb(28, 4))
    if tvb:len() < HEADER_LEN + 8 * n then
        t:add_proto_expert_info(malformed, "claims " .. n .. " values beyond the packet")
        return tvb:len()
    end
    for i = 0, n - 1 do
        t:add(f.value, tvb(HEADER_LEN + 8 * i, 8))
    end
    pinfo.cols.info = string.format("probe stream %d tick %s", tvb(8, 4):uint(),
        tostring(tvb(12, 8):uint64()))
    return tvb:len()
end

local function heuristic(tvb, pinfo, tree)
    if not looks_like_probe(tvb) then
        return false
    end
    probe.dissector(tvb, pinfo, tree)
    return true
end

probe:register_heuristic("udp", heuristic)
DissectorTable.get("udp.port"):add_for_decode_as(probe)
