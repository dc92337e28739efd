"""The @triton.jit functions a kernel reaches, checked or built from source.

KernelSlice walks from the entry through every module-level name the JIT
functions use (kpack_slice.Slicer says what each is bound to).  `check()`
reports every name that cannot be packaged, without compiling anything (the
load pass runs it for the manifest's errors); `build()` makes the real
JITFunction objects, each from its original text in a namespace holding
exactly what it uses, as the module would have held it.
"""
import ast
import builtins
import copy
import types

from kpack_slice import ClassDef, FunctionDef, ModuleRef, NotDefined, SliceError, Undecidable, global_uses

_BUILTIN = object()  # a name Python finds among its builtins

# triton.jit keywords that change the compiled code; the others (repr,
# launch_metadata) only feed profiling hooks and are dropped.
_JIT_KEYWORDS = ("do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline")


def jit_keywords(slicer, fdef):
    """The literal keyword arguments of a def's triton.jit(...) decorator."""
    out = {}
    for kind, dec in fdef.decorators:
        if kind != "jit" or not isinstance(dec, ast.Call):
            continue
        for k in dec.keywords:
            if k.arg in _JIT_KEYWORDS:
                try:
                    out[k.arg] = slicer.evaluate(fdef.module, k.value)
                except Undecidable as u:
                    raise SliceError(fdef.module.loc(k.value), "triton.jit's %s= cannot be evaluated (%s)" % (k.arg, u.why))
    return out


class KernelSlice:
    def __init__(self, slicer, module, entry):
        self.s, self.module, self.entry_name = slicer, module, entry
        self._built = {}      # id(def node) -> JITFunction or function
        self._checked = set()
        self._modules = {}    # qualname -> synthetic ModuleType
        self._namespaces = {}
        self.errors = []

    def entry(self):
        """The entry's FunctionDef; SliceError when it is not a JIT function."""
        where = self.module.loc(self.module.tree)
        try:
            value = self.s.lookup(self.module, self.entry_name)
        except NotDefined:
            raise SliceError(where, "%s has no @triton.jit function named '%s'" % (self.module.display, self.entry_name))
        except Undecidable as u:
            raise SliceError(u.loc or where, "'%s' cannot be resolved: %s" % (self.entry_name, u.why))
        if not isinstance(value, FunctionDef) or value.kind != "jit":
            raise SliceError(where, "'%s' in %s is not a @triton.jit function" % (self.entry_name, self.module.display))
        self._check_decorators(value)
        return value

    def _check_decorators(self, fdef):
        for kind, dec in fdef.decorators:
            if kind == "unknown":
                raise SliceError(fdef.module.loc(dec), "decorator '%s' of '%s' is not one kpack reads (triton.jit, "
                                 "triton.autotune, triton.heuristics, or an autotune that takes configs= and key=)"
                                 % (ast.unparse(dec), fdef.node.name))

    # ---- resolution of one use -------------------------------------------------------

    def _use(self, fdef, name, loc):
        try:
            return self.s.lookup(fdef.module, name)
        except NotDefined:
            if hasattr(builtins, name):
                return _BUILTIN
            raise SliceError(loc, "'%s' (used by '%s') is not defined in module '%s'"
                             % (name, fdef.node.name, fdef.module.qualname))
        except Undecidable as u:
            raise SliceError(loc, _undecidable(name, fdef, u))

    def _resolve_chain(self, fdef, ref, chain, loc):
        """The values along `ref.a.b.c`, stopping at the first that is not a
        module read from source."""
        values = []
        for attr in chain:
            try:
                ref = self.s.attribute(ref, attr, loc)
            except Undecidable as u:
                raise SliceError(loc, _undecidable(attr, fdef, u))
            values.append(ref)
            if not (isinstance(ref, ModuleRef) and ref.source is not None):
                break
        return values

    def _kind_error(self, value, name, fdef, loc):
        if isinstance(value, FunctionDef) and value.kind == "python":
            return SliceError(loc, "'%s' (used by '%s') is a plain Python function (%s); a @triton.jit function "
                              "can only call @triton.jit and @triton.constexpr_function functions"
                              % (name, fdef.node.name, value.module.loc(value.node)))
        if isinstance(value, ClassDef):
            return SliceError(loc, "'%s' (used by '%s') is a class (%s), which kpack does not define"
                              % (name, fdef.node.name, value.module.loc(value.node)))
        if isinstance(value, ModuleRef) and value.external_loc is not None:
            return SliceError(loc, "'%s' (used by '%s') is module '%s' (imported at %s), which kpack does not "
                              "import; load: execute in the manifest runs the kernel's module instead"
                              % (name, fdef.node.name, value.qualname, value.external_loc))
        return None

    # ---- check (describe) ------------------------------------------------------------

    def check(self):
        """Every problem in the entry's closure, as SliceErrors."""
        try:
            self._check_function(self.entry())
        except SliceError as e:
            self.errors.append(e)
        return self.errors

    def _check_function(self, fdef):
        if id(fdef.node) in self._checked:
            return
        self._checked.add(id(fdef.node))
        self._check_decorators(fdef)
        uses, chains = global_uses(fdef.module, fdef.node)
        for name, loc in sorted(uses.items(), key=lambda item: (item[1].line, item[1].col)):
            try:
                self._check_value(fdef, name, self._use(fdef, name, loc), chains.get(name, ()), loc)
            except SliceError as e:
                self.errors.append(e)

    def _check_value(self, fdef, name, value, chains, loc):
        if value is _BUILTIN:
            return
        error = self._kind_error(value, name, fdef, loc)
        if error:
            raise error
        if isinstance(value, FunctionDef):
            self._check_function(value)
        elif isinstance(value, ModuleRef) and value.source is not None:
            for chain in chains:
                values = self._resolve_chain(fdef, value, chain, loc)
                self._check_value(fdef, ".".join((name,) + chain[:len(values)]), values[-1], (), loc)

    # ---- build (compile) -------------------------------------------------------------

    def build(self):
        """The entry's JITFunction, and everything it reaches, made from
        source.  Raises SliceError."""
        return self._build_function(self.entry())

    def functions(self):
        """Every JIT function build() made."""
        import triton
        return [f for f in self._built.values() if isinstance(f, triton.runtime.JITFunction)]

    def _namespace(self, module):
        ns = self._namespaces.get(module.qualname)
        if ns is None:
            # __name__ gives the functions the module name the JIT would see.
            ns = {"__name__": module.qualname, "__builtins__": builtins}
            self._namespaces[module.qualname] = ns
        return ns

    def _build_function(self, fdef):
        import triton
        built = self._built.get(id(fdef.node))
        if built is not None:
            return built
        self._check_decorators(fdef)
        module, node = fdef.module, fdef.node
        ns = self._namespace(module)
        uses, chains = global_uses(module, node)
        # Defaults and annotations are evaluated when the def runs: their
        # names go into the namespace first.
        for name in _definition_time_names(node):
            if name in uses and name not in ns:
                self._provide(ns, fdef, name, uses[name], chains.get(name, ()))
        stripped = copy.copy(node)
        stripped.decorator_list = []
        code = compile(ast.Module(body=[stripped], type_ignores=[]), module.display, "exec")
        # The def runs in the namespace (its globals), but what the module
        # binds the name to is decided by the module, not by this def.
        previous = ns.pop(node.name, _BUILTIN)
        exec(code, ns)
        raw = ns.pop(node.name)
        if previous is not _BUILTIN:
            ns[node.name] = previous
        if fdef.kind == "jit":
            built = triton.jit(raw, **jit_keywords(self.s, fdef))
        elif fdef.kind == "constexpr_function":
            built = triton.constexpr_function(raw)
        else:
            built = raw  # a plain helper of a constexpr_function
        self._built[id(node)] = built
        # Body names are looked up when Triton compiles, after this returns:
        # recursion (a JIT function calling itself, or two calling each
        # other) finds the built object.
        for name, loc in sorted(uses.items(), key=lambda item: (item[1].line, item[1].col)):
            if name not in ns:
                self._provide(ns, fdef, name, loc, chains.get(name, ()))
            elif name in chains and any(ns[name] is m for m in self._modules.values()):
                self._extend_module(ns[name], fdef, name, chains[name], loc)
        return built

    def _provide(self, ns, fdef, name, loc, chains):
        value = self._use(fdef, name, loc)
        if value is _BUILTIN:
            return
        ns[name] = self._materialize(fdef, name, value, chains, loc)

    def _materialize(self, fdef, name, value, chains, loc):
        if isinstance(value, FunctionDef):
            if value.kind == "python" and fdef.kind != "constexpr_function":
                raise self._kind_error(value, name, fdef, loc)
            return self._build_function(value)
        error = self._kind_error(value, name, fdef, loc)
        if error:
            raise error
        if isinstance(value, ModuleRef):
            if value.real is not None:
                return value.real
            module = self._modules.get(value.qualname)
            if module is None:
                module = types.ModuleType(value.qualname)
                self._modules[value.qualname] = module
            self._extend_module(module, fdef, name, chains, loc, value)
            return module
        return value

    def _extend_module(self, module, fdef, name, chains, loc, ref=None):
        """Gives a synthetic package module the attributes `chains` read."""
        ref = ref or ModuleRef(module.__name__, source=self.s.modules.get(module.__name__))
        for chain in chains:
            values = self._resolve_chain(fdef, ref, chain, loc)
            target = module
            for attr, value in zip(chain, values[:-1]):
                sub = getattr(target, attr, None)
                if sub is None:
                    sub = self._modules.setdefault(value.qualname, types.ModuleType(value.qualname))
                    setattr(target, attr, sub)
                target = sub
            attr = chain[len(values) - 1]
            if not hasattr(target, attr):
                setattr(target, attr, self._materialize(fdef, attr, values[-1], (), loc))


def _definition_time_names(node):
    names = set()
    args = node.args
    parts = list(args.defaults) + [d for d in args.kw_defaults if d is not None]
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None and a.annotation is not None:
            parts.append(a.annotation)
    if node.returns is not None:
        parts.append(node.returns)
    for part in parts:
        for n in ast.walk(part):
            if isinstance(n, ast.Name):
                names.add(n.id)
    return names


def _undecidable(name, fdef, u):
    fix = ("assume: {%s: VALUE} in the manifest gives it a value, or load: execute runs the kernel's module"
           % u.assume) if u.assume else "load: execute in the manifest runs the kernel's module instead"
    where = "%s: " % u.loc if u.loc is not None else ""
    return "'%s' (used by '%s') cannot be resolved without running code: %s%s; %s" % (
        name, fdef.node.name, where, u.why, fix)
