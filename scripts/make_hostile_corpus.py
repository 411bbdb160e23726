#!/usr/bin/env python3
"""Writes a corpus of malformed safetensors and .npy files, one per defect.

    python3 scripts/make_hostile_corpus.py DIR

Each hostile file is named after its defect:
    st_<defect>.safetensors   a checkpoint that `swiglu run --weights` must refuse
    idx_<defect>.json         a sharded checkpoint's index that it must refuse
    gguf_<defect>.gguf        a GGUF file that it must refuse
    npy_<defect>.npy          an input that `swiglu run --input` must refuse
and a few valid files serve as the good half of each run and as fuzzer seeds:
    valid_*.safetensors       each holds exactly one block with d = 4 (no --layer needed)
    valid_index.json          a sharded checkpoint of one block over shard_a/shard_b.safetensors
    valid_*.gguf              GGUF files of one block (blk.0.ffn_*) in F32, F16 and Q8_0
    valid_x.npy               float32 (3, 4): an input for every valid checkpoint
    valid_*.npy               other well-formed float32 arrays (fuzzer seeds)

test/hostile/run.sh runs the command on every file; fuzz/ uses the corpus as
seeds. Python 3 standard library only (no numpy), deterministic output.
"""

import json
import os
import struct
import sys

D, F = 4, 8  # the block every valid checkpoint holds


# --------------------------------------------------------------------------
# Building blocks

def f32_bytes(values):
    return struct.pack("<%df" % len(values), *values)


def bf16_bytes(values):
    out = bytearray()
    for v in values:
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        out += struct.pack("<H", bits >> 16)  # truncation: exact for these values
    return bytes(out)


def ramp(n, scale=0.125, offset=0):
    """n small, exactly representable, varied values."""
    return [((i * 7 + offset) % 17 - 8) * scale for i in range(n)]


def st_raw(header, data=b"", length=None):
    """A safetensors file from header text (str or bytes) and data bytes; the
    length field is the header's own length unless `length` says otherwise."""
    if isinstance(header, str):
        header = header.encode("utf-8")
    n = len(header) if length is None else length
    return struct.pack("<Q", n) + header + data


def st_file(tensors, metadata=None, order=None):
    """A well-formed file: tensors = [(name, dtype, shape, bytes)], stored back
    to back in list order; `order` lists the names in header order."""
    entries, data, offset = {}, b"", 0
    for name, dtype, shape, raw in tensors:
        entries[name] = {"dtype": dtype, "shape": list(shape),
                         "data_offsets": [offset, offset + len(raw)]}
        data += raw
        offset += len(raw)
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in (order or [t[0] for t in tensors]):
        header[name] = entries[name]
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - len(text) % 8) % 8)  # padded as the reference writer does
    return st_raw(text, data)


def entry(name, dtype, shape, offsets):
    """One hand-written header entry, so any field can be anything."""
    return '"%s":{"dtype":%s,"shape":%s,"data_offsets":%s}' % (name, dtype, shape, offsets)


def hf(layer=0):
    return "model.layers.%d.mlp." % layer


def hf_block(prefix=hf(0), d=D, f=F, dtype="F32", seed=0):
    conv = f32_bytes if dtype == "F32" else bf16_bytes
    return [
        (prefix + "gate_proj.weight", dtype, [f, d], conv(ramp(f * d, offset=seed))),
        (prefix + "up_proj.weight", dtype, [f, d], conv(ramp(f * d, offset=seed + 3))),
        (prefix + "down_proj.weight", dtype, [d, f], conv(ramp(d * f, offset=seed + 5))),
    ]


def npy_file(header_dict, data, major=1, minor=0, magic=b"\x93NUMPY", length=None):
    """A .npy file from its header dict text, padded as numpy pads it."""
    header = header_dict.encode("latin-1") if isinstance(header_dict, str) else header_dict
    length_size = 2 if major == 1 else 4
    pre = len(magic) + 2 + length_size
    pad = (64 - (pre + len(header) + 1) % 64) % 64
    header = header + b" " * pad + b"\n"
    n = len(header) if length is None else length
    field = struct.pack("<H", n) if length_size == 2 else struct.pack("<I", n)
    return magic + bytes([major, minor]) + field + header + data


def npy_dict(shape, descr="'<f4'", fortran="False"):
    shape_text = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape_text)


def npy_f32(shape, values=None):
    n = 1
    for s in shape:
        n *= s
    return npy_file(npy_dict(shape), f32_bytes(values if values is not None else ramp(n)))


# --------------------------------------------------------------------------
# The corpus

def valid_files():
    files = {}
    files["valid_hf_llama.safetensors"] = st_file(hf_block())
    files["valid_bf16.safetensors"] = st_file(hf_block(dtype="BF16"))
    files["valid_with_metadata.safetensors"] = st_file(hf_block(), metadata={"format": "pt"})
    files["valid_header_order_differs.safetensors"] = st_file(
        hf_block(), order=[hf(0) + "down_proj.weight", hf(0) + "up_proj.weight",
                           hf(0) + "gate_proj.weight"])
    files["valid_bare.safetensors"] = st_file(hf_block(prefix=""))
    gate_up = ramp(2 * F * D, offset=1)
    files["valid_phi3_merged.safetensors"] = st_file([
        (hf(0) + "gate_up_proj.weight", "F32", [2 * F, D], f32_bytes(gate_up)),
        (hf(0) + "down_proj.weight", "F32", [D, F], f32_bytes(ramp(D * F, offset=2))),
    ])
    files["valid_glassllm.safetensors"] = st_file([
        ("W1", "F32", [D, F], f32_bytes(ramp(D * F, offset=4))),
        ("W3", "F32", [D, F], f32_bytes(ramp(D * F, offset=6))),
        ("W2", "F32", [F, D], f32_bytes(ramp(F * D, offset=8))),
    ])
    files["valid_x.npy"] = npy_f32([3, D])
    files["valid_x_btd.npy"] = npy_f32([2, 3, D])
    files["valid_x_empty.npy"] = npy_f32([0, D])
    files["valid_x_v2.npy"] = npy_file(npy_dict([3, D]), f32_bytes(ramp(3 * D)), major=2)
    return files


def hostile_safetensors():
    good = st_file(hf_block())
    g, u, dn = (hf(0) + s for s in ("gate_proj.weight", "up_proj.weight", "down_proj.weight"))
    gate_bytes = 4 * F * D
    data = bytes(3 * gate_bytes)  # three zero-filled weights, back to back

    def three(gate_shape="[8,4]", up_shape="[8,4]", down_shape="[4,8]", dtype='"F32"',
              offsets=None, extra="", tail=b"", data_bytes=data):
        """A header of the three weights, any field replaceable by hand."""
        o = offsets or ["[0,%d]" % gate_bytes, "[%d,%d]" % (gate_bytes, 2 * gate_bytes),
                        "[%d,%d]" % (2 * gate_bytes, 3 * gate_bytes)]
        header = "{" + ",".join([entry(g, dtype, gate_shape, o[0]), entry(u, '"F32"', up_shape, o[1]),
                                 entry(dn, '"F32"', down_shape, o[2])]) + extra + "}"
        return st_raw(header, data_bytes + tail)

    files = {}
    # The 8-byte length field.
    files["empty_file"] = b""
    files["shorter_than_length_field"] = b"\x10\x00\x00"
    files["header_length_zero"] = st_raw("", length=0)
    files["header_length_past_end"] = st_raw('{"a":1}', length=4096)
    files["header_length_over_100MB"] = st_raw('{}', length=100 * 1000 * 1000 + 1)
    files["header_length_u64_max"] = st_raw('{}', length=2 ** 64 - 1)
    files["header_length_wraps_with_8"] = st_raw('{}', length=2 ** 64 - 8)
    # The header text.
    files["header_not_starting_with_brace"] = st_raw('["not", "an", "object"]')
    files["header_starting_with_space"] = st_raw(' {}')
    files["header_invalid_utf8"] = st_raw(b'{"gate\xff\xfe":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}',
                                          bytes(4))
    files["header_overlong_utf8"] = st_raw(b'{"\xc0\xaf":1}')
    files["header_utf16_surrogate_in_utf8"] = st_raw(b'{"\xed\xa0\x80":1}')
    files["header_utf8_cut_at_end"] = st_raw(b'{"a":"\xe2\x82')
    files["header_invalid_json"] = st_raw('{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]')
    files["header_json_trailing_garbage"] = st_raw('{} {}')
    files["header_json_single_quotes"] = st_raw("{'a': 1}")
    files["header_nul_byte"] = st_raw(b'{}\x00{"hidden": 1}')
    files["header_nested_too_deep"] = st_raw('{"a":' + "[" * 64 + "]" * 64 + "}")
    files["header_empty_object"] = st_raw('{}')
    files["header_truncated"] = good[: 8 + 20]
    # Entries.
    files["duplicate_tensor_name"] = st_raw(
        "{" + entry(g, '"F32"', "[8,4]", "[0,128]") + "," + entry(g, '"F32"', "[8,4]", "[128,256]") + "}",
        bytes(256))
    files["duplicate_key_in_entry"] = st_raw(
        '{"%s":{"dtype":"F32","dtype":"I8","shape":[8,4],"data_offsets":[0,128]}}' % g, bytes(128))
    files["entry_not_object"] = st_raw('{"%s":[1,2,3]}' % g)
    files["entry_missing_dtype"] = st_raw('{"%s":{"shape":[1],"data_offsets":[0,4]}}' % g, bytes(4))
    files["entry_missing_shape"] = st_raw('{"%s":{"dtype":"F32","data_offsets":[0,4]}}' % g, bytes(4))
    files["entry_missing_offsets"] = st_raw('{"%s":{"dtype":"F32","shape":[1]}}' % g, bytes(4))
    files["dtype_not_string"] = three(dtype="32")
    files["unknown_dtype"] = three(dtype='"F33"')
    files["dtype_lowercase"] = three(dtype='"f32"')
    files["shape_not_array"] = three(gate_shape='"8x4"')
    files["metadata_not_object"] = st_raw('{"__metadata__":[1,2]}')
    files["metadata_value_not_string"] = st_raw('{"__metadata__":{"format":3}}')
    # Dimensions.
    files["negative_dimension"] = three(gate_shape="[-8,4]")
    files["dimension_not_integer"] = three(gate_shape="[8.5,4]")
    files["dimension_string"] = three(gate_shape='["8",4]')
    files["dimension_2_pow_63"] = three(gate_shape="[9223372036854775808,4]")
    files["dimension_past_u64"] = three(gate_shape="[18446744073709551616,4]")
    files["dimension_huge_exponent"] = three(gate_shape="[1e400,4]")
    files["shape_product_wraps_64_bits"] = three(gate_shape="[4294967296,4294967296,16]")
    files["shape_product_wraps_to_zero"] = three(gate_shape="[2147483648,2147483648,4]")
    files["byte_size_wraps_64_bits"] = three(gate_shape="[4611686018427387904]")
    files["sub_byte_dtype_partial_byte"] = st_raw(
        '{"t":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}}', bytes(1))
    # Offsets.
    files["offsets_not_array"] = three(offsets=['"0-128"', "[128,256]", "[256,384]"])
    files["offsets_three_elements"] = three(offsets=["[0,128,256]", "[128,256]", "[256,384]"])
    files["offsets_negative"] = three(offsets=["[-128,0]", "[128,256]", "[256,384]"])
    files["offsets_not_integer"] = three(offsets=["[0,128.0]", "[128,256]", "[256,384]"])
    files["offsets_begin_after_end"] = three(offsets=["[128,0]", "[128,256]", "[256,384]"])
    files["offsets_end_past_data"] = three(offsets=["[0,128]", "[128,256]", "[256,512]"])
    files["offsets_u64_max"] = three(offsets=["[0,128]", "[128,256]", "[18446744073709551488,18446744073709551615]"])
    files["offsets_overlapping"] = three(offsets=["[0,128]", "[64,192]", "[256,384]"])
    files["offsets_same_range_twice"] = three(offsets=["[0,128]", "[0,128]", "[256,384]"])
    files["offsets_hole_between"] = three(offsets=["[0,128]", "[160,288]", "[288,416]"],
                                          data_bytes=bytes(416))
    files["offsets_hole_before_first"] = three(offsets=["[32,160]", "[160,288]", "[288,416]"],
                                               data_bytes=bytes(416))
    files["offsets_trailing_bytes"] = three(tail=bytes(16))
    files["byte_size_not_shape_times_dtype"] = three(offsets=["[0,124]", "[124,252]", "[252,380]"],
                                                     data_bytes=bytes(380))
    files["truncated_data"] = good[:-7]
    files["truncated_to_header"] = good[: 8 + struct.unpack("<Q", good[:8])[0]]
    # Valid files whose weights are missing or disagree.
    files["weights_none"] = st_file([("embed_tokens.weight", "F32", [2, 2], f32_bytes(ramp(4)))])
    files["weight_up_missing"] = st_file([t for t in hf_block() if "up_proj" not in t[0]])
    files["weight_down_missing"] = st_file([t for t in hf_block() if "down_proj" not in t[0]])
    files["weight_up_disagrees"] = st_file(hf_block()[:1] + [(u, "F32", [F, D + 1], f32_bytes(ramp(F * (D + 1))))]
                                           + hf_block()[2:])
    files["weight_down_transposed"] = st_file(hf_block()[:2] + [(dn, "F32", [F, D], f32_bytes(ramp(F * D)))])
    files["weight_1d"] = st_file([(g, "F32", [F * D], f32_bytes(ramp(F * D)))] + hf_block()[1:])
    files["weight_3d"] = st_file([(g, "F32", [2, F // 2, D], f32_bytes(ramp(F * D)))] + hf_block()[1:])
    files["weight_dtype_i32"] = st_file([(g, "I32", [F, D], bytes(4 * F * D))] + hf_block()[1:])
    files["weight_dtype_f64"] = st_file([(t[0], "F64", t[2], t[3] + t[3]) for t in hf_block()])
    files["weights_empty_block"] = st_file([(g, "F32", [F, 0], b""), (u, "F32", [F, 0], b""),
                                            (dn, "F32", [0, F], b"")])
    files["phi3_gate_up_odd_rows"] = st_file([
        (hf(0) + "gate_up_proj.weight", "F32", [2 * F + 1, D], f32_bytes(ramp((2 * F + 1) * D))),
        (dn, "F32", [D, F], f32_bytes(ramp(D * F))),
    ])
    files["two_layers_no_selector"] = st_file(hf_block() + hf_block(prefix=hf(1), seed=9))
    files["block_d_disagrees_with_input"] = st_file(hf_block(d=D + 1))
    return {"st_%s.safetensors" % k: v for k, v in files.items()}


def sharded_files():
    """A block split over two shards, its index, and indexes with one defect each."""
    g, u, dn = (hf(0) + n for n in ("gate_proj.weight", "up_proj.weight", "down_proj.weight"))
    block = {t[0]: t for t in hf_block()}
    files = {
        "shard_a.safetensors": st_file([block[g], block[u]]),
        "shard_b.safetensors": st_file([block[dn], ("lm_head.weight", "F32", [2, 2], f32_bytes(ramp(4)))]),
    }
    good_map = {g: "shard_a.safetensors", u: "shard_a.safetensors", dn: "shard_b.safetensors"}

    def index(weight_map, **extra):
        return json.dumps(dict(extra, metadata={"total_size": 0}, weight_map=weight_map)).encode()

    def mapped(**changes):
        m = dict(good_map)
        m.update(changes)
        return index(m)

    files["valid_index.json"] = index(good_map)
    bad = {}
    bad["empty"] = b""
    bad["not_json"] = b'{"weight_map": {'
    bad["not_an_object"] = b"[]"
    bad["no_weight_map"] = b'{"metadata": {}}'
    bad["weight_map_not_an_object"] = b'{"weight_map": ["shard_a.safetensors"]}'
    bad["shard_not_a_string"] = index({g: 3})
    bad["tensor_mapped_twice"] = ('{"weight_map": {"%s": "shard_a.safetensors", "%s": "shard_b.safetensors", '
                                  '"%s": "shard_a.safetensors", "%s": "shard_b.safetensors"}}'
                                  % (g, g, u, dn)).encode()
    bad["duplicate_top_level_key"] = b'{"weight_map": {}, "weight_map": {}}'
    bad["nul_byte"] = index(good_map) + b"\x00"
    bad["nests_too_deep"] = ('{"metadata": %s, "weight_map": {}}' % ("[" * 40 + "]" * 40)).encode()
    bad["shard_in_parent_folder"] = mapped(**{dn: "../shard_b.safetensors"})
    bad["shard_absolute_path"] = mapped(**{dn: "/etc/passwd"})
    bad["shard_in_subfolder"] = mapped(**{dn: "sub/shard_b.safetensors"})
    bad["shard_name_empty"] = mapped(**{dn: ""})
    bad["shard_name_dotdot"] = mapped(**{dn: ".."})
    bad["shard_missing"] = mapped(**{dn: "absent.safetensors"})
    bad["shard_lacks_tensor"] = mapped(**{dn: "shard_a.safetensors"})
    bad["shard_malformed"] = mapped(**{dn: "st_truncated_to_header.safetensors"})
    bad["shard_is_the_index"] = mapped(**{dn: "valid_index.json"})
    bad["no_block"] = index({"lm_head.weight": "shard_b.safetensors"})
    files.update({"idx_%s.json" % k: v for k, v in bad.items()})
    return files


def gguf_str(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gguf_info(name, ne, ggml_type, offset):
    return (gguf_str(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
            + struct.pack("<IQ", ggml_type, offset))


def gguf_file(tensors, metadata=b"", n_metadata=0, version=3, align=32):
    """tensors: (name, ne, ggml type, data bytes); placed in order, aligned."""
    infos, data = b"", b""
    for name, ne, ggml_type, raw in tensors:
        data += b"\0" * (-len(data) % align)
        infos += gguf_info(name, ne, ggml_type, len(data))
        data += raw
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), n_metadata) + metadata + infos
    return head + b"\0" * (-len(head) % align) + data


def f16_bytes(values):
    return struct.pack("<%de" % len(values), *values)


def q8_0_bytes(values):
    """Q8_0 blocks of 32 (values small multiples of 1/8: exact)."""
    out = b""
    for i in range(0, len(values), 32):
        block = values[i:i + 32]
        amax = max(abs(v) for v in block)
        d = amax / 127 if amax else 0.0
        out += struct.pack("<e", d) + bytes(struct.pack("<b", int(round(v / d)) if d else 0)[0] for v in block)
    return out


def q_k_bytes(values, ggml_type=12):
    """Super-blocks of 256 in Q4_K (12), Q5_K (13) or Q6_K (14) as bytes of a
    fixed pattern (a scale of 1/64 and varied quants): well-formed blocks of
    any values the format holds, for seeds; `values` gives only the count."""
    size = {12: 144, 13: 176, 14: 210}[ggml_type]
    one = bytes((i * 37 + 11) % 256 for i in range(size))
    scale = struct.pack("<e", 1.0 / 64)
    block = (one[:-2] + scale) if ggml_type == 14 else (scale + scale + one[4:])
    return block * (len(values) // 256)


def gguf_block(encode, ggml_type, d=32, f=32):
    """blk.0.ffn_* of a block with d inputs (a multiple of 32 for the block types)."""
    return [("blk.0.ffn_gate.weight", [d, f], ggml_type, encode(ramp(d * f, offset=1))),
            ("blk.0.ffn_up.weight", [d, f], ggml_type, encode(ramp(d * f, offset=2))),
            ("blk.0.ffn_down.weight", [f, d], ggml_type, encode(ramp(f * d, offset=3)))]


def gguf_files():
    files = {}
    arch = gguf_str("general.architecture") + struct.pack("<I", 8) + gguf_str("llama")
    files["valid_f32.gguf"] = gguf_file(gguf_block(f32_bytes, 0, d=D, f=F), arch, 1)
    files["valid_f16.gguf"] = gguf_file(gguf_block(f16_bytes, 1, d=D, f=F), arch, 1)
    # Q8_0 needs whole blocks of 32 inputs; the run uses a d = 4 input, so
    # this one is a fuzzer seed and a `swiglu info` file (gguf_q8_0_d32).
    good = gguf_file(gguf_block(f32_bytes, 0, d=D, f=F))
    bad = {}
    bad["empty"] = b""
    bad["magic_only"] = b"GGUF"
    bad["version_1"] = b"GGUF" + struct.pack("<IQQ", 1, 0, 0)
    bad["version_99"] = b"GGUF" + struct.pack("<IQQ", 99, 0, 0)
    bad["big_endian"] = b"GGUF" + struct.pack(">IQQ", 3, 0, 0)
    bad["tensor_count_huge"] = b"GGUF" + struct.pack("<IQQ", 3, 1 << 50, 0)
    bad["metadata_count_huge"] = b"GGUF" + struct.pack("<IQQ", 3, 0, 1 << 50)
    bad["key_length_past_end"] = b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, 1 << 40) + b"x" * 16
    bad["value_type_unknown"] = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_str("k") + struct.pack("<I", 77) + b"\0" * 8
    bad["array_length_huge"] = (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_str("k")
                                + struct.pack("<IIQ", 9, 4, 1 << 61))
    nested = struct.pack("<IQ", 4, 0)
    for _ in range(12):
        nested = struct.pack("<IQ", 9, 1) + nested
    bad["arrays_nested_too_deep"] = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gguf_str("k") + struct.pack("<I", 9) + nested
    bad["alignment_not_power_of_two"] = gguf_file(
        gguf_block(f32_bytes, 0, d=D, f=F), gguf_str("general.alignment") + struct.pack("<II", 4, 24), 1)
    bad["alignment_zero"] = gguf_file(
        gguf_block(f32_bytes, 0, d=D, f=F), gguf_str("general.alignment") + struct.pack("<II", 4, 0), 1)
    bad["dims_zero"] = gguf_file([("blk.0.ffn_gate.weight", [], 0, b"")])
    bad["dims_five"] = gguf_file([("blk.0.ffn_gate.weight", [1, 1, 1, 1, 1], 0, f32_bytes([1]))])
    bad["dims_product_wraps"] = gguf_file([("blk.0.ffn_gate.weight", [1 << 32, 1 << 32], 0, b"")])
    bad["q8_0_row_not_whole_blocks"] = gguf_file([("blk.0.ffn_gate.weight", [33, 1], 8, b"\0" * 34)])
    bad["offset_misaligned"] = (b"GGUF" + struct.pack("<IQQ", 3, 1, 0)
                                + gguf_info("blk.0.ffn_gate.weight", [4], 0, 4)) + b"\0" * 64
    bad["tensor_past_end"] = good[:-8]
    bad["truncated_in_infos"] = good[:40]
    bad["tensors_overlap"] = gguf_file([("a", [16], 0, f32_bytes(ramp(16)))])[:0] + (
        b"GGUF" + struct.pack("<IQQ", 3, 2, 0) + gguf_info("a", [16], 0, 0) + gguf_info("b", [16], 0, 32)
        + b"\0" * 9 + b"\0" * 128)
    bad["duplicate_tensor"] = gguf_file([("a", [4], 0, f32_bytes(ramp(4))), ("a", [4], 0, f32_bytes(ramp(4)))])
    bad["duplicate_key"] = gguf_file(gguf_block(f32_bytes, 0, d=D, f=F), arch + arch, 2)
    # K-quants (Q4_K 12, Q5_K 13, Q6_K 14): rows of whole super-blocks of 256,
    # every byte of them in the file.
    bad["q4_k_row_not_whole_superblocks"] = gguf_file([("blk.0.ffn_gate.weight", [288, 1], 12, b"\0" * 288)])
    bad["q5_k_row_shorter_than_a_superblock"] = gguf_file([("blk.0.ffn_up.weight", [100, 2], 13, b"\0" * 352)])
    k_m = gguf_file(gguf_block(q_k_bytes, 12, d=256, f=32)[:2] + [
        ("blk.0.ffn_down.weight", [32, 256], 14, q_k_bytes(ramp(32 * 256), 14))])
    bad["q6_k_truncated_superblock"] = k_m[:-100]
    bad["weight_type_q4_1"] = gguf_file([(n, ne, 3 if "gate" in n else 0,
                                          b"\0" * 20 if "gate" in n else raw)
                                         for n, ne, _, raw in gguf_block(f32_bytes, 0, d=D, f=F)])
    bad["weight_type_unknown"] = gguf_file([(n, ne, 200 if "up" in n else 0, raw)
                                            for n, ne, _, raw in gguf_block(f32_bytes, 0, d=D, f=F)])
    bad["weight_3d"] = gguf_file([(n, ne + [1] if "down" in n else ne, 0, raw)
                                  for n, ne, _, raw in gguf_block(f32_bytes, 0, d=D, f=F)])
    bad["shapes_disagree"] = gguf_file([(n, [F, D] if "up" in n else ne, 0, raw)
                                        for n, ne, _, raw in gguf_block(f32_bytes, 0, d=D, f=F)])
    bad["no_block"] = gguf_file([("token_embd.weight", [D, 2], 0, f32_bytes(ramp(2 * D)))])
    # Mixture-of-Experts tensors (ffn_*_exps: ne = [in, out, experts]) whose
    # expert counts disagree, and one that is 2-D.
    exps = lambda role, ne, n: ("blk.0.ffn_%s_exps.weight" % role, ne, 0, f32_bytes(ramp(n)))
    bad["experts_disagree"] = gguf_file([exps("gate", [D, F, 2], D * F * 2), exps("up", [D, F, 3], D * F * 3),
                                         exps("down", [F, D, 2], D * F * 2)])
    bad["experts_not_3d"] = gguf_file([exps("gate", [D, F], D * F), exps("up", [D, F], D * F),
                                       exps("down", [F, D], D * F)])
    files.update({"gguf_%s.gguf" % k: v for k, v in bad.items()})
    files["seed_q8_0_d32.gguf"] = gguf_file(gguf_block(q8_0_bytes, 8))
    # Q4_K_M's mix (gate, up Q4_K; down Q6_K over f = 256), and one whose
    # super-blocks' scales are NaN and Inf: they load and run to NaN.
    files["seed_q4_k_m_d256.gguf"] = gguf_file(
        gguf_block(q_k_bytes, 12, d=256, f=256)[:2]
        + [("blk.0.ffn_down.weight", [256, 256], 14, q_k_bytes(ramp(256 * 256), 14))])
    def scales(raw, at, f16):  # every super-block's f16 at byte `at` set to f16
        return b"".join(raw[i:i + at] + f16 + raw[i + at + 2:i + 176] for i in range(0, len(raw), 176))
    nan_inf = {"gate": (0, b"\x00\x7e"), "up": (2, b"\x00\x7c"), "down": (0, b"\x00\xfc")}
    files["seed_q5_k_nan_scales.gguf"] = gguf_file(
        [(n, ne, 13, scales(q_k_bytes(ramp(256 * 256), 13), *nan_inf[n.split("_")[1].split(".")[0]]))
         for n, ne, _, _ in gguf_block(f32_bytes, 0, d=256, f=256)])
    return files


def hostile_npy():
    good_data = f32_bytes(ramp(3 * D))
    good = npy_file(npy_dict([3, D]), good_data)
    files = {}
    # Magic, version, header length.
    files["empty_file"] = b""
    files["wrong_magic"] = npy_file(npy_dict([3, D]), good_data, magic=b"\x93NUMPZ")
    files["text_file"] = b"1.0,2.0,3.0,4.0\n"
    files["magic_only"] = b"\x93NUMPY"
    files["version_4_0"] = npy_file(npy_dict([3, D]), good_data, major=4)
    files["version_1_1"] = npy_file(npy_dict([3, D]), good_data, minor=1)
    files["version_0_0"] = npy_file(npy_dict([3, D]), good_data, major=0)
    files["header_length_cut_off"] = b"\x93NUMPY\x02\x00\x10\x00"
    files["header_length_past_end"] = npy_file(npy_dict([3, D]), b"", length=0xFFFF)
    files["v2_header_length_u32_max"] = npy_file(npy_dict([3, D]), good_data, major=2, length=0xFFFFFFFF)
    # The dict.
    files["header_not_a_dict"] = npy_file("[1, 2, 3]", good_data)
    files["header_unterminated_dict"] = npy_file("{'descr': '<f4', 'fortran_order': False", good_data)
    files["header_trailing_text"] = npy_file(npy_dict([3, D]) + " extra", good_data)
    files["header_missing_descr"] = npy_file("{'fortran_order': False, 'shape': (3, 4), }", good_data)
    files["header_missing_shape"] = npy_file("{'descr': '<f4', 'fortran_order': False, }", good_data)
    files["header_duplicate_key"] = npy_file(
        "{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }", good_data)
    files["header_unknown_key"] = npy_file(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'extra': 1, }", good_data)
    files["header_non_ascii"] = npy_file(b"{'descr': '<f4\xe9', 'fortran_order': False, 'shape': (3, 4), }",
                                         good_data)
    files["header_nul_byte"] = npy_file(b"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }\x00",
                                        good_data)
    files["fortran_order_not_bool"] = npy_file(npy_dict([3, D], fortran="0"), good_data)
    # dtype and order.
    files["dtype_f8"] = npy_file(npy_dict([3, D], descr="'<f8'"), good_data + good_data)
    files["dtype_big_endian_f4"] = npy_file(npy_dict([3, D], descr="'>f4'"), good_data)
    files["dtype_i4"] = npy_file(npy_dict([3, D], descr="'<i4'"), good_data)
    files["dtype_f2"] = npy_file(npy_dict([3, D], descr="'<f2'"), good_data[: len(good_data) // 2])
    files["dtype_structured"] = npy_file(npy_dict([3, D], descr="[('a', '<f4')]"), good_data)
    files["dtype_object"] = npy_file(npy_dict([3, D], descr="'|O'"), bytes(8 * 3 * D))
    files["fortran_order"] = npy_file(npy_dict([3, D], fortran="True"), good_data)
    # Shapes.
    files["shape_lies_more_rows"] = npy_file(npy_dict([4, D]), good_data)
    files["shape_lies_fewer_rows"] = npy_file(npy_dict([2, D]), good_data)
    files["shape_not_tuple"] = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (12), }", good_data)
    files["shape_list"] = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': [3, 4], }", good_data)
    files["shape_negative"] = npy_file(npy_dict([-3, D]), good_data)
    files["shape_dimension_past_i64"] = npy_file(npy_dict([2 ** 64, D]), good_data)
    files["shape_product_wraps_64_bits"] = npy_file(npy_dict([2 ** 32, 2 ** 32, D]), good_data)
    files["shape_bytes_wrap_64_bits"] = npy_file(npy_dict([2 ** 62, D]), good_data)
    files["shape_float_dimension"] = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3.0, 4), }",
                                              good_data)
    files["truncated_data"] = good[:-3]
    files["truncated_header"] = good[:30]
    # Well-formed arrays the block cannot take.
    files["rank_0"] = npy_file(npy_dict([]), f32_bytes([1.0]))
    files["rank_1"] = npy_f32([D])
    files["rank_4"] = npy_f32([1, 1, 3, D])
    files["last_dimension_not_d"] = npy_f32([3, D + 1])
    return {"npy_%s.npy" % k: v for k, v in files.items()}


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: make_hostile_corpus.py DIR\n")
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    files = {}
    for part in (valid_files(), hostile_safetensors(), sharded_files(), gguf_files(), hostile_npy()):
        for name in part:
            assert name not in files, name
        files.update(part)
    for name, data in sorted(files.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("%d files in %s" % (len(files), out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
