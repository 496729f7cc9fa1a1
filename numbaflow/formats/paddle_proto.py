"""Paddle's ProgramDesc schema (paddle/fluid/framework/framework.proto, proto2), written
here from its field numbers and built into message classes with the `protobuf` package
(no generated code, no protoc): `ProgramDesc`, `VarType`, `TensorDesc`, ...

Only the fields an inference model uses are declared; protobuf keeps any others as
unknown fields, so a newer file still parses.
"""
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "paddle.framework.proto"

# AttrType and VarType.Type values (framework.proto)
ATTR_TYPES = dict(INT=0, FLOAT=1, STRING=2, INTS=3, FLOATS=4, STRINGS=5, BOOLEAN=6,
                  BOOLEANS=7, BLOCK=8, LONG=9, BLOCKS=10, LONGS=11, FLOAT64S=12, VAR=13,
                  VARS=14, FLOAT64=15, SCALAR=16, SCALARS=17)
VAR_TYPES = dict(BOOL=0, INT16=1, INT32=2, INT64=3, FP16=4, FP32=5, FP64=6, LOD_TENSOR=7,
                 SELECTED_ROWS=8, FEED_MINIBATCH=9, FETCH_LIST=10, STEP_SCOPES=11,
                 LOD_RANK_TABLE=12, LOD_TENSOR_ARRAY=13, PLACE_LIST=14, READER=15, RAW=17,
                 TUPLE=18, SIZE_T=19, UINT8=20, INT8=21, BF16=22, COMPLEX64=23,
                 COMPLEX128=24, STRING=25, STRINGS=26, VOCAB=27, FEED_LIST=28, PSTRING=29,
                 SPARSE_COO=30, SPARSE_CSR=31)

_F = descriptor_pb2.FieldDescriptorProto
OPT, REQ, REP = _F.LABEL_OPTIONAL, _F.LABEL_REQUIRED, _F.LABEL_REPEATED
I32, I64, F32, F64, BOOL, STR = (_F.TYPE_INT32, _F.TYPE_INT64, _F.TYPE_FLOAT, _F.TYPE_DOUBLE,
                                 _F.TYPE_BOOL, _F.TYPE_STRING)
MSG, ENUM = _F.TYPE_MESSAGE, _F.TYPE_ENUM

# message -> [(field, number, label, type, message/enum type name or None)]
_MESSAGES = {
    "Version": [("version", 1, OPT, I64, None)],
    "Complex": [("r", 1, REQ, F64, None), ("i", 2, REQ, F64, None)],
    "Scalar": [("type", 1, REQ, ENUM, "Scalar.Type"), ("b", 2, OPT, BOOL, None),
               ("i", 3, OPT, I64, None), ("r", 4, OPT, F64, None),
               ("c", 5, OPT, MSG, "Complex")],
    "OpDesc.Attr": [("name", 1, REQ, STR, None), ("type", 2, REQ, ENUM, "AttrType"),
                    ("i", 3, OPT, I32, None), ("f", 4, OPT, F32, None),
                    ("s", 5, OPT, STR, None), ("ints", 6, REP, I32, None),
                    ("floats", 7, REP, F32, None), ("strings", 8, REP, STR, None),
                    ("b", 10, OPT, BOOL, None), ("bools", 11, REP, BOOL, None),
                    ("block_idx", 12, OPT, I32, None), ("l", 13, OPT, I64, None),
                    ("blocks_idx", 14, REP, I32, None), ("longs", 15, REP, I64, None),
                    ("float64s", 16, REP, F64, None), ("var_name", 17, OPT, STR, None),
                    ("vars_name", 18, REP, STR, None), ("float64", 19, OPT, F64, None),
                    ("scalar", 20, OPT, MSG, "Scalar"), ("scalars", 21, REP, MSG, "Scalar")],
    "OpDesc.Var": [("parameter", 1, REQ, STR, None), ("arguments", 2, REP, STR, None)],
    "OpDesc": [("type", 3, REQ, STR, None), ("inputs", 1, REP, MSG, "OpDesc.Var"),
               ("outputs", 2, REP, MSG, "OpDesc.Var"), ("attrs", 4, REP, MSG, "OpDesc.Attr"),
               ("is_target", 5, OPT, BOOL, None)],
    "VarType.TensorDesc": [("data_type", 1, REQ, ENUM, "VarType.Type"),
                           ("dims", 2, REP, I64, None)],
    "VarType.LoDTensorDesc": [("tensor", 1, REQ, MSG, "VarType.TensorDesc"),
                              ("lod_level", 2, OPT, I32, None)],
    "VarType.LoDTensorArrayDesc": [("tensor", 1, REQ, MSG, "VarType.TensorDesc"),
                                   ("lod_level", 2, OPT, I32, None)],
    "VarType": [("type", 1, REQ, ENUM, "VarType.Type"),
                ("selected_rows", 2, OPT, MSG, "VarType.TensorDesc"),
                ("lod_tensor", 3, OPT, MSG, "VarType.LoDTensorDesc"),
                ("tensor_array", 4, OPT, MSG, "VarType.LoDTensorArrayDesc")],
    "VarDesc": [("name", 1, REQ, STR, None), ("type", 2, REQ, MSG, "VarType"),
                ("persistable", 3, OPT, BOOL, None), ("need_check_feed", 4, OPT, BOOL, None),
                ("is_parameter", 5, OPT, BOOL, None), ("stop_gradient", 6, OPT, BOOL, None)],
    "BlockDesc": [("idx", 1, REQ, I32, None), ("parent_idx", 2, REQ, I32, None),
                  ("vars", 3, REP, MSG, "VarDesc"), ("ops", 4, REP, MSG, "OpDesc"),
                  ("forward_block_idx", 5, OPT, I32, None)],
    "OpVersion": [("version", 1, REQ, I32, None)],
    "OpVersionMap.OpVersionPair": [("op_name", 1, REQ, STR, None),
                                   ("op_version", 2, REQ, MSG, "OpVersion")],
    "OpVersionMap": [("pair", 1, REP, MSG, "OpVersionMap.OpVersionPair")],
    "ProgramDesc": [("blocks", 1, REP, MSG, "BlockDesc"), ("version", 4, OPT, MSG, "Version"),
                    ("op_version_map", 5, OPT, MSG, "OpVersionMap")],
}
_ENUMS = {"AttrType": ATTR_TYPES, "VarType.Type": VAR_TYPES,
          "Scalar.Type": dict(BOOLEAN=1, LONG=2, FLOAT64=3, COMPLEX128=4)}


def _build():
    fd = descriptor_pb2.FileDescriptorProto(name="numbaflow_paddle_framework.proto",
                                            package=PACKAGE, syntax="proto2")
    protos = {}

    def proto_of(path):         # "OpDesc.Attr" -> the nested DescriptorProto
        if path in protos:
            return protos[path]
        outer, _, name = path.rpartition(".")
        parent = proto_of(outer).nested_type if outer else fd.message_type
        protos[path] = p = parent.add(name=name)
        return p

    for path, fields in _MESSAGES.items():
        msg = proto_of(path)
        for name, number, label, ftype, ref in fields:
            f = msg.field.add(name=name, number=number, label=label, type=ftype)
            if ref is not None:
                f.type_name = f".{PACKAGE}.{ref}"
    for path, values in _ENUMS.items():
        outer, _, name = path.rpartition(".")
        enum = (proto_of(outer).enum_type if outer else fd.enum_type).add(name=name)
        for k, v in values.items():
            enum.value.add(name=k, number=v)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return {path: message_factory.GetMessageClass(
                pool.FindMessageTypeByName(f"{PACKAGE}.{path}")) for path in _MESSAGES}


_CLASSES = _build()
ProgramDesc = _CLASSES["ProgramDesc"]
TensorDesc = _CLASSES["VarType.TensorDesc"]
