#!/usr/bin/env bash
# Writes the seed corpus for every fuzz target into fuzz/corpus/ from jitterlab's own
# generators (nothing copied from other people's captures). Needs a release build of the
# workspace (`cargo build --release --examples` and the `jitterlab` binary) and editcap.
set -euo pipefail
cd "$(dirname "$0")"
J=../target/release/jitterlab
C=corpus
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p $C/{trace_reader,capture_pcap,capture_pcapng,decode_rtp,decode_probe,decode_layout,import_csv,policy_parse,grid_parse}
$J synth -o $T/a.jtr --duration 1s --rate 20 --model loss=10%,jitter=20ms >/dev/null 2>&1
$J synth -o $T/b.jtr --duration 1s --rate 10 --motion teleport --seed 3 >/dev/null 2>&1
cp $T/a.jtr $C/trace_reader/synth-loss
cp $T/b.jtr $C/trace_reader/synth-teleport
../target/release/examples/make_rtp_pcap $T/r.pcap 6
# capture_pcap: first byte odd = the whole file, even = records after a fixed header.
(printf '\x01'; cat $T/r.pcap) >$C/capture_pcap/rtp-whole
(printf '\x00'; tail -c +25 $T/r.pcap) >$C/capture_pcap/rtp-records
editcap -F pcapng $T/r.pcap $T/r.pcapng
(printf '\x01'; cat $T/r.pcapng) >$C/capture_pcapng/rtp-whole
python3 - <<'EOF'
import struct

def write(path, data):
    open(path, 'wb').write(data if isinstance(data, bytes) else data.encode())

# capture_pcapng: one enhanced packet block (Ethernet/IPv4/UDP/RTP) after the fixed header.
rtp = bytes([0x80, 0x00]) + struct.pack('>HII', 1, 160, 0x1234) + b'\xff' * 20
udp = struct.pack('>HHHH', 5004, 5006, 8 + len(rtp), 0) + rtp
ip = bytes([0x45, 0]) + struct.pack('>H', 20 + len(udp)) + b'\0\0\0\0' + bytes([64, 17, 0, 0]) \
    + bytes([127, 0, 0, 1, 127, 0, 0, 1]) + udp
eth = b'\0' * 12 + b'\x08\x00' + ip
body = struct.pack('<IIIII', 0, 0, 1000, len(eth), len(eth)) + eth + b'\0' * ((-len(eth)) % 4)
n = 12 + len(body)
write('corpus/capture_pcapng/epb', b'\x00' + struct.pack('<II', 6, n) + body + struct.pack('<I', n))

# Decoder targets: packets as [length][time step in ms (255: 3 ms back)] payload.
def packets(items):
    return b''.join(bytes([len(p), step]) + p for p, step in items)

def rtp_pkt(seq, ts, pt=0, ssrc=0x1234):
    return bytes([0x80, pt]) + struct.pack('>HII', seq & 0xffff, ts & 0xffffffff, ssrc) + b'\xd5' * 40

write('corpus/decode_rtp/g711', packets(
    (rtp_pkt(s, s * 160, pt=0 if i % 4 else 96), 20) for i, s in enumerate([1, 2, 3, 5, 4, 4, 65535, 0, 1])))
csrc15 = bytes([0x8f, 0]) + struct.pack('>HII', 1, 1, 1)  # CSRC count 15 in a 12-byte packet
padded = bytes([0xa0, 8]) + struct.pack('>HII', 2, 2, 1) + b'\0\0\x05'
ext = bytes([0x90, 8]) + struct.pack('>HII', 3, 3, 1) + struct.pack('>HH', 0xbede, 1) + b'\1\2\3\4'
write('corpus/decode_rtp/odd', packets([(csrc15, 5), (padded, 255), (ext, 5)]))

def probe(stream, tick, send, state, values, flags=0):
    return b'JLPR' + bytes([1, flags]) + struct.pack('>HIQqI', len(values), stream, tick, send, state) \
        + b''.join(struct.pack('>d', v) for v in values)

write('corpus/decode_probe/one', probe(1, 7, 350_000_000, 2, [1.0, -2.5, 3.25]))
write('corpus/decode_probe/stream', packets([(probe(1, 1, 0, 0, [0.0, 1.0]), 50),
    (probe(1, 2, 50_000_000, 0, [0.5, 1.5], flags=4), 50), (probe(2, 1, 0, 1, []), 50)]))

# decode_layout: the spec, a newline, then packets.
pk = lambda s: struct.pack('>I', s) + struct.pack('<d', s * 16.0) + struct.pack('<fff', 1, 2, 3)
write('corpus/decode_layout/basic', b'seq=u32be@0,send=f64le@4:ms,value=f32le@12*3\n'
    + packets((pk(i), 16) for i in range(4)))
pk2 = lambda s: bytes([1]) + struct.pack('>HI', s, s) + bytes([0]) + struct.pack('<ff', 0.5, 0.25)
write('corpus/decode_layout/ticks', b'stream=u8@0,seq=u16be@1,send=u32be@3/60,state=u8@7,x=f32le@8,y=f32le@12\n'
    + packets((pk2(i), 16) for i in range(4)))

write('corpus/import_csv/basic', 'seq,send_ms,arrival_ms,x,y\n0,0,40,1.0,2.0\n1,50,95,1.5,2.5\n2,100,,2,3\n')
write('corpus/import_csv/nan', 'seq,send_ms,arrival_ms\n0,0,NaN\n1,inf,3\n')

for i, p in enumerate(['fixed:delay=100ms,max_gap=250ms,capacity=64,miss=extrapolate:50ms',
                       'jitter:a=2,k=3,min=20ms,max=300ms', 'quantile:q=0.95,window=2s,apply=stretch:max_rate=5%',
                       'mirror:buffer_multiplier=2,send_rate=30',
                       'source:cl_interp=100ms,cl_interp_ratio=2,cl_updaterate=20', 'neteq', 'fixed',
                       'offset=40ms', 'auto']):
    write(f'corpus/policy_parse/p{i}', p)

write('corpus/grid_parse/toml', '[fixed]\ndelay = "0ms..300ms step 5ms"\nmax_gap = ["100ms","150ms","250ms"]\n\n'
      '[jitter]\nk = [2,3,4]\n\n[[quantile]]\nq = [0.9, 0.95]\n')
write('corpus/grid_parse/cli', '--sweep fixed:delay=0..300ms/5ms\n')
write('corpus/grid_parse/cli2', '--sweep jitter:k=1|2|3\n')
EOF
