"""What a kernel's decorators and signature say, read from the source.

- The signature: each parameter's name, whether Triton treats it as a
  tl.constexpr, its annotated type and its default (Triton's own KernelParam
  decides, so kpack agrees with the JIT).
- triton.autotune (or an autotune that takes configs= and key=): the configs
  (kwargs, num_warps, num_stages, num_ctas, maxnreg) and the key.  Configs
  are evaluated from literals and triton.Config calls; pre and post hooks,
  which run Python around every launch, are refused.
- triton.heuristics: each lambda translated into kpack's launch-expression
  language (docs/manifest.md), so the launcher computes the constexpr from
  the call's values; what cannot be translated is reported with the reason.
"""
import ast
import inspect
import json

from kpack_slice import FunctionDef, Undecidable

# Autotune keywords that only steer benchmarking at run time: an
# ahead-of-time build has nothing to do with them.
_BENCH_ONLY = {"prune_configs_by", "reset_to_zero", "restore_value", "warmup", "rep", "use_cuda_graph", "do_bench",
               "cache_results"}


def _literal(value):
    """A JSON-able literal, or raises TypeError."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(type(value).__name__)


def describe_params(slicer, fdef, do_not_specialize, do_not_specialize_on_alignment):
    """Triton's view of each parameter."""
    from triton.runtime.jit import KernelParam
    node, module = fdef.node, fdef.module
    args = node.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = []
    for index, (arg, default) in enumerate(zip(positional + args.kwonlyargs,
                                               defaults + list(args.kw_defaults))):
        entry = {"name": arg.arg, "loc": str(module.loc(arg))}
        annotation = inspect.Parameter.empty
        if arg.annotation is not None:
            try:
                annotation = slicer.evaluate(module, arg.annotation)
            except Undecidable as u:
                entry["error"] = "its annotation cannot be evaluated (%s)" % u.why
        entry["has_default"] = default is not None
        if default is not None:
            try:
                # As JSON text: C++ must tell 3.0 (a float) from 3.
                entry["default"] = json.dumps(_literal(slicer.evaluate(module, default)))
            except (Undecidable, TypeError) as e:
                entry["default_error"] = "its default %s is not a literal (%s)" % (
                    ast.unparse(default), getattr(e, "why", e))
        param = inspect.Parameter(arg.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation)
        kp = KernelParam(index, param, arg.arg in do_not_specialize or index in do_not_specialize,
                         arg.arg in do_not_specialize_on_alignment or index in do_not_specialize_on_alignment)
        entry["constexpr"] = bool(kp.is_constexpr)
        entry["annotation_type"] = kp.annotation_type if isinstance(kp.annotation_type, str) else ""
        entry["do_not_specialize"] = bool(kp.do_not_specialize)
        entry["do_not_specialize_on_alignment"] = bool(kp.do_not_specialize_on_alignment)
        out.append(entry)
    if args.vararg or args.kwarg:
        raise ValueError("a @triton.jit function cannot take *args or **kwargs")
    return out


def _call_args(dec, names):
    """Positional and keyword arguments of a decorator call by parameter name."""
    out = {}
    for name, arg in zip(names, dec.args):
        out[name] = arg
    for k in dec.keywords:
        if k.arg is not None:
            out[k.arg] = k.value
    return out


def describe_autotune(slicer, fdef, dec):
    """The configs and key of one autotune decorator."""
    import triton
    module = fdef.module
    args = _call_args(dec, ["configs", "key"])
    out = {"loc": str(module.loc(dec)), "configs": [], "key": []}
    for hook in ("pre_hook", "post_hook"):
        if hook in args and not (isinstance(args[hook], ast.Constant) and args[hook].value is None):
            out["error"] = ("autotune's %s runs Python around every launch (%s), which a C launcher cannot do; "
                            "remove the kernel from the package or write the hook's work into the engine"
                            % (hook, module.loc(args[hook])))
            return out
    if "key" in args:
        try:
            key = slicer.evaluate(module, args["key"])
            out["key"] = [str(k) for k in (key or [])]
        except Undecidable as u:
            out["key_error"] = "the key cannot be evaluated (%s: %s)" % (u.loc, u.why)
    if "configs" not in args:
        out["error"] = "the autotune decorator has no configs"
        return out
    try:
        configs = slicer.evaluate(module, args["configs"])
    except Undecidable as u:
        assume = " or assume: {%s: VALUE}" % u.assume if u.assume else ""
        out["configs_error"] = ("its configs cannot be evaluated without running code (%s: %s); list them in the "
                                "manifest's autotune: configs:%s" % (u.loc, u.why, assume))
        return out
    for config in configs:
        if not isinstance(config, triton.Config):
            out["configs_error"] = "its configs are not all triton.Config (found %r)" % (config,)
            return out
        if config.pre_hook is not None:
            out["error"] = ("a config's pre_hook runs Python before every launch, which a C launcher cannot do "
                            "(%s)" % module.loc(args["configs"]))
            return out
        if getattr(config, "ir_override", None):
            out["error"] = "a config's ir_override replaces the kernel's code; kpack compiles the source"
            return out
        try:
            kwargs = {k: json.dumps(_literal(v)) for k, v in config.kwargs.items()}
        except TypeError as e:
            out["configs_error"] = "a config's kwargs are not literals (%s)" % e
            return out
        out["configs"].append({"kwargs": kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages,
                               "num_ctas": config.num_ctas, "maxnreg": config.maxnreg})
    return out


def describe_heuristics(slicer, fdef, dec, param_names):
    """[{name, expr or error, source, loc}] for one heuristics decorator."""
    module = fdef.module
    args = _call_args(dec, ["values"])
    if "values" not in args:
        return [{"name": "", "loc": str(module.loc(dec)), "error": "triton.heuristics has no values"}]
    entries = []
    try:
        _dict_entries(slicer, module, args["values"], entries)
    except Undecidable as u:
        return [{"name": "", "loc": str(u.loc), "error": "its values are not a dict kpack can read (%s)" % u.why}]
    out = []
    for key, value in entries:
        item = {"name": key, "loc": str(module.loc(value)), "source": ast.unparse(value)}
        try:
            item["expr"] = translate_heuristic(slicer, module, value)
        except Untranslatable as e:
            item["error"] = str(e)
        out.append(item)
    return out


def _dict_entries(slicer, module, node, entries):
    """(key, value node) of a dict display, following ** of module-level
    dict displays (fla shares heuristics that way)."""
    if isinstance(node, ast.Name):
        binding = _assignment_of(slicer, module, node)
        if binding is None:
            raise Undecidable(module.loc(node), "'%s' is not a module-level dict" % node.id)
        module, node = binding
    if not isinstance(node, ast.Dict):
        raise Undecidable(module.loc(node), "%s is not a dict display" % ast.unparse(node))
    for k, v in zip(node.keys, node.values):
        if k is None:
            _dict_entries(slicer, module, v, entries)
        elif isinstance(k, ast.Constant) and isinstance(k.value, str):
            entries.append((k.value, v))
        else:
            raise Undecidable(module.loc(k), "a heuristics key is not a string literal")


def _assignment_of(slicer, module, name_node):
    """(module, value node) of the module-level assignment `name = ...`."""
    bindings = module.bindings.get(name_node.id, [])
    for b in reversed(bindings):
        if b.kind == "assign" and not b.data[1] and slicer.guards_hold(module, b.guards):
            return module, b.data[0]
        if b.kind == "from":
            source, level, name = b.data
            qualname = slicer._relative(module, source, level)
            ref = slicer.import_module(qualname, module.loc(b.node))
            if ref.source is None:
                return None
            return _assignment_of(slicer, ref.source, ast.Name(id=name))
    return None


class Untranslatable(Exception):
    pass


_OPERATOR_TEXT = {ast.Div: "/", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitAnd: "&",
                  ast.BitXor: "^", ast.MatMult: "@"}


class _Translator:
    """A heuristic's body as a kpack launch expression."""

    def __init__(self, slicer, module, args_name):
        self.s, self.m, self.args = slicer, module, args_name

    def fail(self, node, why):
        raise Untranslatable("%s: %s" % (self.m.loc(node), why))

    def name_of(self, node):
        """args['X'] -> X, or None."""
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == self.args
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            return node.slice.value
        return None

    def expr(self, node):
        name = self.name_of(node)
        if name is not None:
            return name
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return "1" if node.value else "0"
            if isinstance(node.value, int):
                return str(node.value) if node.value >= 0 else "(%d)" % node.value
            self.fail(node, "the constant %r is not an integer" % (node.value,))
        if isinstance(node, ast.BinOp):
            return self.binary(node)
        if isinstance(node, ast.UnaryOp):
            inner = self.expr(node.operand)
            if isinstance(node.op, ast.Not):
                return "!(%s)" % inner
            if isinstance(node.op, ast.USub):
                return "-(%s)" % inner
            if isinstance(node.op, ast.UAdd):
                return inner
            self.fail(node, "operator ~ has no kpack equivalent")
        if isinstance(node, ast.BoolOp):
            op = " && " if isinstance(node.op, ast.And) else " || "
            return "(" + op.join(self.expr(v) for v in node.values) + ")"
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.IfExp):
            return "(%s ? %s : %s)" % (self.expr(node.test), self.expr(node.body), self.expr(node.orelse))
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Name):
            self.fail(node, "it reads '%s', which is not one of the kernel's arguments (args['...'])" % node.id)
        self.fail(node, "%s has no kpack equivalent" % ast.unparse(node))

    def binary(self, node):
        left, right = self.expr(node.left), self.expr(node.right)
        op = type(node.op)
        if op is ast.FloorDiv:
            return "floordiv(%s, %s)" % (left, right)
        if op is ast.Mod:
            return "floormod(%s, %s)" % (left, right)
        symbols = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}
        if op not in symbols:
            self.fail(node, "operator %s has no kpack equivalent (integer arithmetic only)" % _OPERATOR_TEXT.get(op, "?"))
        return "(%s %s %s)" % (left, symbols[op], right)

    def compare(self, node):
        if len(node.ops) != 1:
            self.fail(node, "chained comparisons have no kpack equivalent")
        op, right = node.ops[0], node.comparators[0]
        if isinstance(op, (ast.Is, ast.IsNot)):
            if not (isinstance(right, ast.Constant) and right.value is None):
                self.fail(node, "'is' compares only with None")
            name = self.name_of(node.left)
            if name is None:
                self.fail(node, "only an argument (args['...']) can be tested against None")
            return "%s %s NULL" % (name, "==" if isinstance(op, ast.Is) else "!=")
        symbols = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
        if type(op) not in symbols:
            self.fail(node, "operator %s has no kpack equivalent" % type(op).__name__)
        return "(%s %s %s)" % (self.expr(node.left), symbols[type(op)], self.expr(right))

    def call(self, node):
        import math
        import triton
        try:
            callee = self.s.evaluate(self.m, node.func)
        except Undecidable:
            callee = None
        known = {triton.next_power_of_2: ("next_pow2", 1), triton.cdiv: ("cdiv", 2), math.gcd: ("gcd", 2)}
        if callee not in known and callee not in (min, max, int, bool):
            what = callee.qualname + "()" if isinstance(callee, FunctionDef) else ast.unparse(node.func) + "()"
            self.fail(node, "it calls %s, which has no kpack equivalent" % what)
        if node.keywords:
            self.fail(node, "keyword arguments have no kpack equivalent")
        args = [self.expr(a) for a in node.args]
        if callee in known:
            name, arity = known[callee]
            if len(args) != arity:
                self.fail(node, "%s takes %d arguments" % (ast.unparse(node.func), arity))
            return "%s(%s)" % (name, ", ".join(args))
        if callee in (min, max) and len(args) >= 2:
            return "%s(%s)" % (callee.__name__, ", ".join(args))
        if callee is int and len(args) == 1:
            return args[0]
        if callee is bool and len(args) == 1:
            return "(%s != 0)" % args[0]
        self.fail(node, "%s takes other arguments here" % ast.unparse(node.func))


def translate_heuristic(slicer, module, node):
    """The kpack expression a heuristic computes; Untranslatable otherwise."""
    if isinstance(node, ast.Name):
        try:
            value = slicer.lookup(module, node.id)
        except Exception:
            value = None
        if isinstance(value, FunctionDef) and len(value.node.body) == 1 and isinstance(value.node.body[0], ast.Return):
            fn = value.node
            return _Translator(slicer, value.module, fn.args.args[0].arg).expr(fn.body[0].value)
        raise Untranslatable("%s: '%s' is not a lambda or a one-line function" % (module.loc(node), node.id))
    if not isinstance(node, ast.Lambda) or len(node.args.args) != 1:
        raise Untranslatable("%s: a heuristic must be a lambda of one argument (the kernel's arguments)"
                             % module.loc(node))
    return _Translator(slicer, module, node.args.args[0].arg).expr(node.body)
