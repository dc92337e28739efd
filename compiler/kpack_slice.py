"""Reads Triton kernels from their Python sources without running their modules.

kpack builds what a kernel needs from the source text alone: the entry, the
@triton.jit functions it reaches (following imports through the files of its
package, relative imports included), the module-level constants they use and
their imports from Triton.  Nothing of the kernel's package is executed: no
torch, no GPU, no import side effects.  The JIT functions Triton then
compiles are made from the original text, so line numbers, names and cache
keys are the JIT's.

Module-level `if` and `try` statements are followed where their outcome can
be decided from literals, Triton itself, the defaults of environment lookups
and the manifest's `assume:` values.  A name bound under a condition that
cannot be decided, or by an import of a module outside Triton and the
package, is an error only when a kernel uses it; the error names the
construct and the manifest key that resolves it.
"""
import ast
import builtins
import importlib
import linecache
import os
import symtable
import textwrap
import types


class Loc:
    """A position in a Python source, as messages print it (1-based column)."""
    __slots__ = ("file", "line", "col")

    def __init__(self, file, line, col):
        self.file, self.line, self.col = file, line, col

    def __str__(self):
        return "%s:%d:%d" % (self.file, self.line, self.col)


class SliceError(Exception):
    """A construct kpack cannot package, at `loc`."""

    def __init__(self, loc, message):
        super().__init__("%s: %s" % (loc, message))
        self.loc, self.message = loc, message


class Undecidable(Exception):
    """A value that only running code would tell.  `assume` is the manifest
    key (a qualified Python name) whose `assume:` entry would decide it."""

    def __init__(self, loc, why, assume=None):
        super().__init__(why)
        self.loc, self.why, self.assume = loc, why, assume


class NotDefined(Exception):
    pass


# Markers for what a module-level name is bound to, besides plain values.
class ModuleRef:
    """A module: one of the kernel's package (read from source), a Triton
    or standard-library module (imported for real), or one kpack does not
    import (`external`, with the import statement's position)."""

    def __init__(self, qualname, source=None, real=None, external_loc=None):
        self.qualname, self.source, self.real, self.external_loc = qualname, source, real, external_loc


class FunctionDef:
    """A module-level `def`: a @triton.jit function (kind "jit"), a
    @triton.constexpr_function ("constexpr_function") or plain Python
    ("python").  `decorators` are (kind, node) from the outside in."""

    def __init__(self, module, node, kind, decorators):
        self.module, self.node, self.kind, self.decorators = module, node, kind, decorators

    @property
    def qualname(self):
        return self.module.qualname + "." + self.node.name


class ClassDef:
    def __init__(self, module, node):
        self.module, self.node = module, node


# Standard-library modules that kpack imports for real: they have no side
# effects and kernels' module-level code uses them for constants.  `os` is
# here for os.environ.get / os.getenv, whose defaults are used (below).
REAL_STDLIB = {"math", "operator", "functools", "itertools", "typing", "enum", "abc", "numbers", "os",
               "dataclasses", "collections", "warnings", "re"}

# Builtins that constant evaluation may call (all pure).
PURE_BUILTINS = {"int", "float", "bool", "str", "tuple", "list", "dict", "set", "frozenset", "len", "min", "max",
                 "abs", "round", "sorted", "sum", "range", "zip", "enumerate", "reversed", "isinstance", "hasattr",
                 "getattr", "any", "all", "divmod", "pow", "repr", "map", "filter", "type"}

_LIMIT_ITEMS = 100000  # elements a comprehension may produce at build time


class Guard:
    """A condition under which a binding executes: an `if` test (or its
    negation), or a `try` body succeeding (or a handler catching its
    ImportError)."""

    def __init__(self, kind, node, truth, pos, handler=None):
        self.kind, self.node, self.truth, self.pos, self.handler = kind, node, truth, pos, handler


class Binding:
    def __init__(self, name, kind, node, guards, pos, data=None):
        self.name, self.kind, self.node, self.guards, self.pos, self.data = name, kind, node, guards, pos, data


class Module:
    """One parsed source file and every module-level binding in it, in
    execution order, each with the conditions under which it executes."""

    def __init__(self, qualname, path, display, text, is_package):
        self.qualname, self.path, self.display, self.text = qualname, path, display, text
        self.is_package = is_package
        self.tree = ast.parse(text, filename=display)
        self.bindings = {}   # name -> [Binding] in source order
        self.stars = []      # `from x import *` bindings
        self._pos = 0
        self._collect(self.tree.body, [])

    @property
    def package(self):
        """The package relative imports start from."""
        return self.qualname if self.is_package else self.qualname.rpartition(".")[0]

    def loc(self, node):
        return Loc(self.display, getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1)

    def _bind(self, name, kind, node, guards, data=None):
        b = Binding(name, kind, node, list(guards), self._pos, data)
        if kind == "star":
            self.stars.append(b)
        else:
            self.bindings.setdefault(name, []).append(b)

    def _bind_target(self, target, value, guards, stmt, path=()):
        if isinstance(target, ast.Name):
            self._bind(target.id, "assign", stmt, guards, (value, path))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, element in enumerate(target.elts):
                if isinstance(element, ast.Starred):
                    for name in _stored_names(element):
                        self._bind(name, "unsupported", stmt, guards, "is bound by a starred assignment")
                else:
                    self._bind_target(element, value, guards, stmt, path + (i,))
        # Attribute and subscript targets bind no module-level name.

    def _collect(self, statements, guards):
        for stmt in statements:
            self._pos += 1
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        self._bind(alias.asname, "import", stmt, guards, (alias.name, alias.name))
                    else:
                        top = alias.name.split(".")[0]
                        self._bind(top, "import", stmt, guards, (top, alias.name))
            elif isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    if alias.name == "*":
                        self._bind("*", "star", stmt, guards, (stmt.module, stmt.level))
                    else:
                        self._bind(alias.asname or alias.name, "from", stmt, guards,
                                   (stmt.module, stmt.level, alias.name))
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    self._bind_target(target, stmt.value, guards, stmt)
            elif isinstance(stmt, ast.AnnAssign):
                if stmt.value is not None:
                    self._bind_target(stmt.target, stmt.value, guards, stmt)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._bind(stmt.name, "def", stmt, guards)
            elif isinstance(stmt, ast.ClassDef):
                self._bind(stmt.name, "class", stmt, guards)
            elif isinstance(stmt, ast.If):
                self._collect(stmt.body, guards + [Guard("if", stmt.test, True, self._pos)])
                self._collect(stmt.orelse, guards + [Guard("if", stmt.test, False, self._pos)])
            elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
                self._collect(stmt.body, guards + [Guard("try", stmt, True, self._pos)])
                for handler in stmt.handlers:
                    if handler.name:
                        self._bind(handler.name, "unsupported", handler, guards, "is an exception")
                    self._collect(handler.body, guards + [Guard("try", stmt, False, self._pos, handler)])
                self._collect(stmt.orelse, guards + [Guard("try", stmt, True, self._pos)])
                self._collect(stmt.finalbody, guards)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    if item.optional_vars is not None:
                        for name in _stored_names(item.optional_vars):
                            self._bind(name, "unsupported", stmt, guards, "is bound by a with statement")
                self._collect(stmt.body, guards)
            elif isinstance(stmt, ast.Delete):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        self._bind(target.id, "delete", stmt, guards)
            else:
                # Loops, augmented assignments, match: bindings whose value
                # depends on running the statement.
                for name in _stored_names(stmt):
                    self._bind(name, "unsupported", stmt, guards, "is bound by a statement kpack does not run (%s)"
                               % type(stmt).__name__)


def _stored_names(node):
    """Names a statement binds at module level (not inside nested defs)."""
    out = []
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            out.append(child.id)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and child is not node:
            out.append(child.name)
    return out


class SearchPath:
    """Where a kernel's package modules are found: the build's python path,
    then the directory holding the source's top-level package, then the
    source's own directory (its neighbours, as Triton's AOT tool allows)."""

    def __init__(self, dirs, root):
        self.dirs = [os.path.abspath(d) for d in dirs]
        self.root = os.path.abspath(root) if root else None

    def with_source(self, source):
        """This path plus the directories a source file's imports need."""
        here = os.path.dirname(os.path.abspath(source))
        top = here
        while os.path.isfile(os.path.join(top, "__init__.py")):
            top = os.path.dirname(top)
        extra = [d for d in (top, here) if d not in self.dirs]
        path = SearchPath([], self.root)
        path.dirs = self.dirs + extra
        return path

    def find(self, qualname):
        """(path, is_package) of module `qualname`, or None."""
        parts = qualname.split(".")
        for d in self.dirs:
            base = os.path.join(d, *parts)
            if os.path.isfile(os.path.join(base, "__init__.py")):
                return os.path.join(base, "__init__.py"), True
            if os.path.isfile(base + ".py"):
                return base + ".py", False
        return None

    def qualname_of(self, path):
        """The module name of a file under one of the directories."""
        path = os.path.abspath(path)
        for d in self.dirs:
            rel = os.path.relpath(path, d)
            if rel.startswith(".."):
                continue
            parts = rel[:-3].split(os.sep) if rel.endswith(".py") else rel.split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if all(p.isidentifier() for p in parts) and parts:
                return ".".join(parts)
        return os.path.splitext(os.path.basename(path))[0]

    def display(self, path):
        """The name a file is recorded under (line info, messages): relative
        to the project root when inside it, else to its search directory."""
        path = os.path.abspath(path)
        if self.root:
            rel = os.path.relpath(path, self.root)
            if not rel.startswith(".."):
                return rel.replace(os.sep, "/")
        for d in self.dirs:
            rel = os.path.relpath(path, d)
            if not rel.startswith(".."):
                return rel.replace(os.sep, "/")
        return os.path.basename(path)


_MISSING = object()


class Slicer:
    """Answers what module-level names are bound to, reading sources and
    importing only Triton and pure standard-library modules."""

    def __init__(self, search_path, assume=None):
        self.path = search_path
        self.assume = dict(assume or {})
        self.modules = {}      # qualname -> Module
        self.inputs = []       # files read, in the order first read
        self._resolving = set()
        self._guards = {}      # (module, id(guard node), truth, handler) -> bool

    # ---- modules ---------------------------------------------------------------------

    def module_for_file(self, path, display=None):
        qualname = self.path.qualname_of(path)
        if qualname in self.modules:
            return self.modules[qualname]
        return self._load(qualname, path, os.path.basename(path) == "__init__.py", display)

    def _load(self, qualname, path, is_package, display=None):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        display = display or self.path.display(path)
        module = Module(qualname, path, display, text, is_package)
        # Triton reads function sources back through inspect/linecache under
        # the code's file name: the display name (mtime None keeps it).
        linecache.cache[display] = (len(text), None, text.splitlines(True), display)
        self.modules[qualname] = module
        self.inputs.append(os.path.abspath(path))
        return module

    def import_module(self, qualname, loc):
        """What `import qualname` gives: a package module read from source, a
        real Triton or standard-library module, or an external one."""
        if qualname in self.modules:
            return ModuleRef(qualname, source=self.modules[qualname])
        top = qualname.split(".")[0]
        if top == "triton" or top in REAL_STDLIB:
            try:
                return ModuleRef(qualname, real=importlib.import_module(qualname))
            except ImportError as e:
                raise Undecidable(loc, "module '%s' cannot be imported (%s)" % (qualname, e))
        found = self.path.find(qualname)
        if found:
            return ModuleRef(qualname, source=self._load(qualname, found[0], found[1]))
        return ModuleRef(qualname, external_loc=loc)

    def _relative(self, module, name, level):
        if not level:
            return name
        base = module.package.split(".") if module.package else []
        if level - 1 > len(base):
            raise NotDefined()
        base = base[:len(base) - (level - 1)]
        return ".".join(base + ([name] if name else []))

    # ---- names -----------------------------------------------------------------------

    def lookup(self, module, name, before=None, loc=None):
        """The value `name` has in `module` (as of statement position
        `before`, or at the end).  Raises NotDefined or Undecidable."""
        key = module.qualname + "." + name
        # An assumed function keeps its definition: its calls evaluate to
        # the assumed value (_Evaluator.eval_Call).
        if key in self.assume and not any(b.kind == "def" for b in module.bindings.get(name, [])):
            return self.assume[key]
        candidates = module.bindings.get(name, []) + module.stars
        candidates.sort(key=lambda b: b.pos)
        for b in reversed(candidates):
            if before is not None and b.pos >= before:
                continue
            if not self.guards_hold(module, b.guards):
                continue
            if b.kind == "star":
                target = self._relative(module, b.data[0], b.data[1])
                ref = self.import_module(target, module.loc(b.node))
                value = self.attribute(ref, name, module.loc(b.node), missing=_MISSING)
                if value is _MISSING:
                    continue
                return value
            if b.kind == "delete":
                break
            return self._value_of(module, b)
        raise NotDefined()

    def _value_of(self, module, b):
        marker = (module.qualname, b.name, b.pos)
        if marker in self._resolving:
            raise Undecidable(module.loc(b.node), "'%s' is defined in terms of itself" % b.name)
        self._resolving.add(marker)
        try:
            return self._bound_value(module, b)
        finally:
            self._resolving.discard(marker)

    def _bound_value(self, module, b):
        loc = module.loc(b.node)
        if b.kind == "import":
            bound, full = b.data
            ref = self.import_module(full, loc)
            return ref if bound == full else self.import_module(bound, loc)
        if b.kind == "from":
            source, level, name = b.data
            qualname = self._relative(module, source, level)
            ref = self.import_module(qualname, loc)
            value = self.attribute(ref, name, loc, missing=_MISSING)
            if value is _MISSING:
                raise Undecidable(loc, "module '%s' has no name '%s'" % (qualname, name))
            return value
        if b.kind == "assign":
            node, path = b.data
            value = self.evaluate(module, node, before=b.pos)
            for index in path:
                value = value[index]
            return value
        if b.kind == "def":
            return self.classify(module, b.node)
        if b.kind == "class":
            return ClassDef(module, b.node)
        raise Undecidable(loc, "'%s' %s" % (b.name, b.data))

    def attribute(self, value, name, loc, missing=None):
        """`value.name` for a module reference or a real object."""
        if isinstance(value, ModuleRef):
            if value.source is not None:
                try:
                    return self.lookup(value.source, name, loc=loc)
                except NotDefined:
                    sub = value.qualname + "." + name
                    if value.source.is_package and self.path.find(sub):
                        return self.import_module(sub, loc)
                    if missing is not None:
                        return missing
                    raise Undecidable(loc, "module '%s' has no name '%s'" % (value.qualname, name))
            if value.real is not None:
                if hasattr(value.real, name):
                    attr = getattr(value.real, name)
                    return ModuleRef(attr.__name__, real=attr) if isinstance(attr, types.ModuleType) else attr
                try:
                    return self.import_module(value.qualname + "." + name, loc)
                except Undecidable:
                    if missing is not None:
                        return missing
                    raise Undecidable(loc, "module '%s' has no name '%s'" % (value.qualname, name))
            raise Undecidable(value.external_loc, "'%s' comes from module '%s', which kpack does not import"
                              % (name, value.qualname), assume=value.qualname + "." + name)
        try:
            return getattr(value, name)
        except AttributeError:
            if missing is not None:
                return missing
            raise Undecidable(loc, "%r has no attribute '%s'" % (value, name))

    def guards_hold(self, module, guards):
        for g in guards:
            key = (module.qualname, id(g.node), g.truth, id(g.handler))
            if key not in self._guards:
                self._guards[key] = self._guard_holds(module, g)
            if not self._guards[key]:
                return False
        return True

    def _guard_holds(self, module, g):
        if g.kind == "if":
            try:
                return bool(self.evaluate(module, g.node, before=g.pos)) == g.truth
            except NotDefined as e:
                raise Undecidable(module.loc(g.node), "the condition uses a name that is not defined (%s)" % e)
        succeeded = self._try_succeeds(module, g.node)
        if g.truth:
            return succeeded
        if succeeded:
            return False
        # The first handler that catches an ImportError runs.
        for handler in g.node.handlers:
            if _catches_import_error(handler):
                return handler is g.handler
        return False

    def _try_succeeds(self, module, node):
        """Whether the imports in a `try` body would all succeed (kpack
        assumes its other statements do not raise)."""
        for stmt in node.body:
            for child in ast.walk(stmt):
                if isinstance(child, ast.Import):
                    for alias in child.names:
                        if not self._importable(alias.name, module.loc(child)):
                            return False
                elif isinstance(child, ast.ImportFrom):
                    try:
                        qualname = self._relative(module, child.module, child.level)
                    except NotDefined:
                        return False
                    if not self._importable(qualname, module.loc(child)):
                        return False
                    ref = self.import_module(qualname, module.loc(child))
                    for alias in child.names:
                        if alias.name != "*" and self.attribute(ref, alias.name, module.loc(child),
                                                                missing=_MISSING) is _MISSING:
                            return False
        return True

    def _importable(self, qualname, loc):
        try:
            ref = self.import_module(qualname, loc)
        except Undecidable:
            return False
        return ref.external_loc is None

    # ---- definitions -----------------------------------------------------------------

    def classify(self, module, node):
        """What a module-level `def` is, from its decorators."""
        import triton
        decorators, kind = [], "python"
        for dec in node.decorator_list:
            callee_node = dec.func if isinstance(dec, ast.Call) else dec
            try:
                callee = self.evaluate(module, callee_node)
            except (Undecidable, NotDefined):
                callee = None
            if callee is triton.jit:
                kind = "jit"
                decorators.append(("jit", dec))
            elif callee is triton.autotune:
                decorators.append(("autotune", dec))
            elif callee is triton.heuristics:
                decorators.append(("heuristics", dec))
            elif callee is getattr(triton, "constexpr_function", None):
                kind = "constexpr_function"
                decorators.append(("constexpr_function", dec))
            elif isinstance(dec, ast.Call) and any(k.arg == "configs" for k in dec.keywords):
                # A project's own autotune (fla's fla_cache_autotune) is read
                # as triton.autotune: configs= and key= mean the same.
                decorators.append(("autotune", dec))
            else:
                decorators.append(("unknown", dec))
        return FunctionDef(module, node, kind, decorators)

    # ---- constant evaluation ---------------------------------------------------------

    def evaluate(self, module, node, before=None, env=None):
        """The value of a module-level expression, computed without running
        any of the package's code.  Raises Undecidable."""
        return _Evaluator(self, module, before, env or {}).eval(node)


def _catches_import_error(handler):
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for n in names:
        text = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else ""
        if text in ("ImportError", "ModuleNotFoundError", "Exception", "BaseException"):
            return True
    return False


_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
           ast.Pow: lambda a, b: a ** b, ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
           ast.BitOr: lambda a, b: a | b, ast.BitAnd: lambda a, b: a & b, ast.BitXor: lambda a, b: a ^ b}
_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
            ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
            ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b, ast.In: lambda a, b: a in b,
            ast.NotIn: lambda a, b: a not in b}
_UNARY = {ast.UAdd: lambda a: +a, ast.USub: lambda a: -a, ast.Not: lambda a: not a, ast.Invert: lambda a: ~a}


class _Evaluator:
    """Evaluates one expression for Slicer.evaluate."""

    def __init__(self, slicer, module, before, env):
        self.s, self.m, self.before, self.env = slicer, module, before, env

    def fail(self, node, why, assume=None):
        raise Undecidable(self.m.loc(node), why, assume)

    def eval(self, node):
        method = getattr(self, "eval_" + type(node).__name__, None)
        if method is None:
            self.fail(node, "%s expressions are not evaluated at build time" % type(node).__name__)
        try:
            return method(node)
        except (Undecidable, NotDefined):
            raise
        except RecursionError:
            self.fail(node, "the expression nests too deeply")
        except Exception as e:  # an operation on the evaluated values failed
            self.fail(node, "evaluating it raises %s: %s" % (type(e).__name__, e))

    def eval_Constant(self, node):
        return node.value

    def eval_Name(self, node):
        if node.id in self.env:
            return self.env[node.id]
        try:
            return self.s.lookup(self.m, node.id, self.before, self.m.loc(node))
        except NotDefined:
            if node.id in PURE_BUILTINS or node.id in ("True", "False", "None"):
                return getattr(builtins, node.id)
            raise Undecidable(self.m.loc(node), "'%s' is not defined in %s" % (node.id, self.m.qualname))
        except Undecidable as u:
            if u.assume is None:
                u.assume = self.m.qualname + "." + node.id
            raise

    def eval_Attribute(self, node):
        return self.s.attribute(self.eval(node.value), node.attr, self.m.loc(node))

    def eval_Tuple(self, node):
        return tuple(self._items(node.elts))

    def eval_List(self, node):
        return list(self._items(node.elts))

    def eval_Set(self, node):
        return set(self._items(node.elts))

    def _items(self, elts):
        out = []
        for e in elts:
            if isinstance(e, ast.Starred):
                out.extend(self.eval(e.value))
            else:
                out.append(self.eval(e))
        return out

    def eval_Dict(self, node):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(self.eval(v))
            else:
                out[self.eval(k)] = self.eval(v)
        return out

    def eval_BinOp(self, node):
        return _BINARY[type(node.op)](self.eval(node.left), self.eval(node.right))

    def eval_UnaryOp(self, node):
        return _UNARY[type(node.op)](self.eval(node.operand))

    def eval_BoolOp(self, node):
        # Three-valued: an operand that cannot be decided does not matter
        # when another decides the whole (`device_query() and False`).
        value, unknown = None, None
        for v in node.values:
            try:
                value = self.eval(v)
            except Undecidable as u:
                unknown = unknown or u
                continue
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        if unknown is not None:
            raise unknown
        return value

    def eval_Compare(self, node):
        left = self.eval(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def eval_IfExp(self, node):
        return self.eval(node.body) if self.eval(node.test) else self.eval(node.orelse)

    def eval_Subscript(self, node):
        target = node.value
        # os.environ['X'] reads the build machine's environment: refused.
        if self._is_environ(target):
            self.fail(node, "it reads an environment variable without a default")
        return self.eval(target)[self.eval(node.slice)]

    def eval_Slice(self, node):
        part = lambda n: None if n is None else self.eval(n)
        return slice(part(node.lower), part(node.upper), part(node.step))

    def eval_JoinedStr(self, node):
        return "".join(str(self.eval(v)) for v in node.values)

    def eval_FormattedValue(self, node):
        value = self.eval(node.value)
        spec = self.eval(node.format_spec) if node.format_spec is not None else ""
        return format(value, spec)

    def eval_Lambda(self, node):
        self.fail(node, "a lambda is not evaluated at build time")

    def _comprehension(self, node, make):
        results = []

        def loop(generators, env):
            if not generators:
                results.append(make(env))
                if len(results) > _LIMIT_ITEMS:
                    self.fail(node, "the comprehension makes more than %d items" % _LIMIT_ITEMS)
                return
            g = generators[0]
            for item in _Evaluator(self.s, self.m, self.before, env).eval(g.iter):
                inner = dict(env)
                _assign(g.target, item, inner, self, node)
                sub = _Evaluator(self.s, self.m, self.before, inner)
                if all(sub.eval(cond) for cond in g.ifs):
                    loop(generators[1:], inner)

        loop(node.generators, dict(self.env))
        return results

    def eval_ListComp(self, node):
        return self._comprehension(node, lambda env: _Evaluator(self.s, self.m, self.before, env).eval(node.elt))

    eval_GeneratorExp = eval_ListComp

    def eval_SetComp(self, node):
        return set(self.eval_ListComp(node))

    def eval_DictComp(self, node):
        pairs = self._comprehension(node, lambda env: (_Evaluator(self.s, self.m, self.before, env).eval(node.key),
                                                       _Evaluator(self.s, self.m, self.before, env).eval(node.value)))
        return dict(pairs)

    def _is_environ(self, node):
        if isinstance(node, ast.Attribute) and node.attr == "environ":
            try:
                return self.eval(node.value) is os or getattr(self.eval(node.value), "real", None) is os
            except Undecidable:
                return False
        return False

    def eval_Call(self, node):
        func = node.func
        # Environment lookups take their defaults: a build does not depend
        # on the variables of the machine it runs on (docs/manifest.md).
        if isinstance(func, ast.Attribute) and func.attr == "get" and self._is_environ(func.value):
            return self.eval(node.args[1]) if len(node.args) > 1 else None
        if isinstance(func, ast.Attribute) and func.attr == "getenv":
            base = self.eval(func.value)
            if getattr(base, "real", None) is os:
                return self.eval(node.args[1]) if len(node.args) > 1 else None
        callee = self.eval(func)
        if isinstance(callee, FunctionDef):
            if callee.qualname in self.s.assume:
                return self.s.assume[callee.qualname]
            self.fail(node, "it calls %s(), which kpack does not run" % callee.qualname, callee.qualname)
        if isinstance(callee, (ModuleRef, ClassDef)):
            self.fail(node, "it calls %s, which kpack does not run" % _describe(callee))
        if not _may_call(callee):
            self.fail(node, "it calls %r, which kpack does not run at build time" % (callee,))
        args = self._items(node.args)
        # hasattr and getattr on a module: the module's binding (a package
        # module read from source is no Python module object).
        if callee in (hasattr, getattr) and args and isinstance(args[0], ModuleRef) and len(args) >= 2:
            value = self.s.attribute(args[0], args[1], self.m.loc(node), missing=_MISSING)
            if callee is hasattr:
                return value is not _MISSING
            if value is _MISSING:
                if len(args) > 2:
                    return args[2]
                self.fail(node, "module '%s' has no name '%s'" % (args[0].qualname, args[1]))
            return value
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                kwargs.update(self.eval(k.value))
            else:
                kwargs[k.arg] = self.eval(k.value)
        return callee(*args, **kwargs)


def _describe(value):
    if isinstance(value, ModuleRef):
        return "module " + value.qualname
    return "class " + value.node.name


def _may_call(callee):
    """Pure builtins, and the functions and classes of Triton and of the
    standard-library modules kpack imports."""
    if getattr(builtins, getattr(callee, "__name__", ""), None) is callee:
        return callee.__name__ in PURE_BUILTINS
    module = getattr(callee, "__module__", "") or ""
    top = module.split(".")[0]
    return top == "triton" or (top in REAL_STDLIB and top != "os")


def _assign(target, value, env, evaluator, node):
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        values = list(value)
        if len(values) != len(target.elts):
            evaluator.fail(node, "cannot unpack %d values into %d names" % (len(values), len(target.elts)))
        for t, v in zip(target.elts, values):
            _assign(t, v, env, evaluator, node)
    else:
        evaluator.fail(node, "unsupported comprehension target")


# ---- what a function uses ----------------------------------------------------------------

def function_source(module, node):
    """The `def` statement's text without its decorators, dedented."""
    lines = module.text.splitlines(True)[node.lineno - 1:node.end_lineno]
    return textwrap.dedent("".join(lines))


def global_uses(module, node):
    """The module-level names a `def` uses (body, defaults, annotations),
    each with the position of its first use, and the attribute chains read
    from each (`op.exp` gives op -> {("exp",)})."""
    table = symtable.symtable(function_source(module, node), module.display, "exec")
    names = {s.get_name() for s in table.get_symbols() if s.is_referenced() and s.get_name() != node.name}

    def collect(t):
        if t.get_type() == "function":
            names.update(t.get_globals())
        for child in t.get_children():
            collect(child)

    for child in table.get_children():
        collect(child)
    first, chains = {}, {}
    for part in [node.args] + node.body + ([node.returns] if node.returns else []):
        for n in ast.walk(part):
            if isinstance(n, ast.Name) and n.id in names and n.id not in first:
                first[n.id] = module.loc(n)
            if isinstance(n, ast.Attribute):
                chain, base = [], n
                while isinstance(base, ast.Attribute):
                    chain.append(base.attr)
                    base = base.value
                if isinstance(base, ast.Name) and base.id in names:
                    chains.setdefault(base.id, set()).add(tuple(reversed(chain)))
    return {name: first.get(name, module.loc(node)) for name in names}, chains
