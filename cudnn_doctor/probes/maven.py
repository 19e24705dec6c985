"""Maven's own model of a project, for what the doctor needs: modules, profiles, effective dependencies.

Read as Maven does (https://maven.apache.org/ref/current/maven-model-builder/, "Model Builder"):
- the reactor: `<modules>` from the folder given, and `<modules>` inside `<profiles>` (with the profile);
- each module's parent chain: `<relativePath>` (default `../pom.xml`, an empty one means "not local"),
  the parent's coordinates checked, else `~/.m2/repository`;
- properties, child over parent, with the built-in `project.*` ones; `${...}` expanded with a bound:
  a property that refers to itself or grows without end is a problem, never a hang; one that refers
  through more than MAX_PROPERTY_DEPTH others, or a reactor of more than MAX_MODULES modules, is read
  as far as the bound (a problem of kind "limit", CD439), never a RecursionError;
- `<dependencyManagement>` gives versions (and nothing else) to the dependencies that omit them,
  `<dependencies>` (inherited from parents) is what is used; dependencies on other reactor modules
  bring theirs along (compile and runtime scopes).
XML is parsed by expat with no DOCTYPE and no entities at all: a pom that declares either is refused.
The encoding in the XML declaration (or a BOM) is honoured through Python's codecs.
"""

from __future__ import annotations

import os
import re
from collections import deque
from dataclasses import dataclass, field
from xml.parsers import expat

from cudnn_doctor.operating_system import CURRENT
from cudnn_doctor.probes.jvm_build import (
    BuildModule,
    BuildProject,
    Dependency,
    Problems,
    Profile,
    ProjectProblem,
    UnreadableFile,
    exists,
    is_regular_file,
    read_project_file,
)

MAX_DEPTH = 200  # XML nesting
MAX_ELEMENTS = 200_000
MAX_MODULES = 400
MAX_PARENTS = 20
MAX_PROPERTY_LENGTH = 16 * 1024  # an expanded ${...} longer than this grows without end
MAX_PROPERTY_STEPS = 20_000  # expansions per pom, all properties together
MAX_PROPERTY_DEPTH = 64  # ${a} -> ${b} -> ...: real poms go two or three deep
PROPERTY = re.compile(r"\$\{([^${}]*)\}")
DECLARATION = re.compile(rb"""^<\?xml[^>]{0,200}?encoding\s*=\s*["']([A-Za-z0-9._:-]{1,40})["']""")
NON_TRANSITIVE = {"test", "provided", "system", "import"}


class RefusedXml(Exception):
    """XML the doctor will not read (DOCTYPE, entities, too deep)."""


@dataclass
class Element:
    tag: str
    line: int
    text: str = ""
    children: list[Element] = field(default_factory=list)

    def child(self, tag: str) -> Element | None:
        return next((c for c in self.children if c.tag == tag), None)

    def all(self, tag: str) -> list[Element]:
        return [c for c in self.children if c.tag == tag]

    def value(self, tag: str) -> str | None:
        found = self.child(tag)
        return found.text.strip() if found is not None else None


def decode_xml(data: bytes) -> str:
    """The text of an XML file in the encoding its BOM or declaration names (UTF-8 by default)."""
    if data.startswith(b"\xef\xbb\xbf"):
        encoding, data = "utf-8", data[3:]
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"
    else:
        declared = DECLARATION.match(data)
        encoding = declared.group(1).decode("ascii") if declared else "utf-8"
    try:
        text = data.decode(encoding)
    except LookupError:
        raise UnreadableFile(f"its XML declaration names the encoding {encoding!r}, which is unknown") from None
    except UnicodeDecodeError as error:
        raise UnreadableFile(f"not valid {encoding} (byte {error.start}), the encoding it declares") from None
    # expat is given text, so the declared encoding has been applied: drop it from the declaration
    return re.sub(r"""^(\ufeff?<\?xml[^>]{0,200}?)\s+encoding\s*=\s*["'][^"']*["']""", r"\1", text, count=1)


def parse_xml(data: bytes) -> Element:
    """The element tree of DATA: comments dropped, namespaces kept out of tag names, DOCTYPE refused."""
    text = decode_xml(data)
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    root = Element("", 0)
    stack = [root]
    count = 0

    def refuse_doctype(*_: object) -> None:
        raise RefusedXml("it declares a DOCTYPE, which can define entities; Maven poms have none")

    def refuse_entity(*_: object) -> None:
        raise RefusedXml("it declares or references an external entity")

    def start(tag: str, _attributes: dict[str, str]) -> None:
        nonlocal count
        count += 1
        if len(stack) > MAX_DEPTH or count > MAX_ELEMENTS:
            raise RefusedXml(f"nested deeper than {MAX_DEPTH} or more than {MAX_ELEMENTS} elements")
        element = Element(tag.rpartition(":")[2], parser.CurrentLineNumber)
        stack[-1].children.append(element)
        stack.append(element)

    def end(_tag: str) -> None:
        stack.pop()

    def characters(data: str) -> None:
        if len(stack) > 1 and len(stack[-1].text) < MAX_PROPERTY_LENGTH:
            stack[-1].text += data

    parser.StartDoctypeDeclHandler = refuse_doctype
    parser.EntityDeclHandler = refuse_entity
    parser.UnparsedEntityDeclHandler = refuse_entity
    parser.ExternalEntityRefHandler = refuse_entity  # type: ignore[assignment]
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = characters
    try:
        parser.Parse(text, True)
    except expat.ExpatError as error:
        raise UnreadableFile(f"not well-formed XML (line {error.lineno}: {expat.ErrorString(error.code)})") from None
    if not root.children:
        raise UnreadableFile("no XML element in it")
    return root.children[0]


# --- one pom -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class RawDependency:
    group: str
    artifact: str
    version: str | None
    classifier: str | None
    type: str
    scope: str | None


@dataclass
class RawProfile:
    id: str
    activation: Element | None
    properties: dict[str, str]
    dependencies: list[RawDependency]
    management: list[RawDependency]
    modules: list[str]


@dataclass
class Pom:
    path: str
    group: str | None
    artifact: str | None
    version: str | None
    parent: tuple[str, str, str | None, str | None] | None  # group, artifact, version, relativePath (None: default)
    properties: dict[str, str]
    dependencies: list[RawDependency]
    management: list[RawDependency]
    modules: list[str]
    profiles: list[RawProfile]
    source_directory: str | None
    packaging: str = "jar"


def _dependencies(element: Element | None) -> list[RawDependency]:
    if element is None:
        return []
    found = []
    for dependency in element.all("dependency"):
        found.append(RawDependency(
            group=dependency.value("groupId") or "", artifact=dependency.value("artifactId") or "",
            version=dependency.value("version"), classifier=dependency.value("classifier") or None,
            type=dependency.value("type") or "jar", scope=dependency.value("scope")))
    return found


def _properties(element: Element | None) -> dict[str, str]:
    return {prop.tag: prop.text.strip() for prop in element.children} if element is not None else {}


def _management(element: Element) -> list[RawDependency]:
    managed = element.child("dependencyManagement")
    return _dependencies(managed.child("dependencies")) if managed is not None else []


def _modules(element: Element) -> list[str]:
    modules = element.child("modules")
    return [m.text.strip() for m in modules.all("module") if m.text.strip()] if modules is not None else []


def read_pom(path: str) -> Pom:
    """One pom.xml as written (no inheritance). UnreadableFile or RefusedXml when it cannot be read."""
    project = parse_xml(read_project_file(path))
    if project.tag != "project":
        raise UnreadableFile(f"its root element is <{project.tag}>, not <project>")
    parent = project.child("parent")
    parent_coordinates = None
    if parent is not None:
        relative = parent.child("relativePath")
        parent_coordinates = (parent.value("groupId") or "", parent.value("artifactId") or "", parent.value("version"),
                              None if relative is None else relative.text.strip())
    profiles = []
    profiles_element = project.child("profiles")
    for profile in profiles_element.all("profile") if profiles_element is not None else []:
        profiles.append(RawProfile(
            id=profile.value("id") or "default", activation=profile.child("activation"),
            properties=_properties(profile.child("properties")),
            dependencies=_dependencies(profile.child("dependencies")), management=_management(profile),
            modules=_modules(profile)))
    build = project.child("build")
    return Pom(
        path=path, group=project.value("groupId"), artifact=project.value("artifactId"),
        version=project.value("version"), parent=parent_coordinates,
        properties=_properties(project.child("properties")),
        dependencies=_dependencies(project.child("dependencies")), management=_management(project),
        modules=_modules(project), profiles=profiles,
        source_directory=build.value("sourceDirectory") if build is not None else None,
        packaging=project.value("packaging") or "jar")


# --- profiles ----------------------------------------------------------------------------------

def describe_profile(profile: RawProfile, basedir: str, env: dict[str, str]) -> Profile:
    """How PROFILE is activated, in words, and whether it is active here when no -P is given."""
    activation = profile.activation
    if activation is None:
        return Profile(profile.id, f"only with -P {profile.id}", False)
    if (activation.value("activeByDefault") or "").lower() == "true":
        return Profile(profile.id, "active by default", True)
    os_element = activation.child("os")
    if os_element is not None:
        name, family = (os_element.value("name") or "").lower(), (os_element.value("family") or "").lower()
        system = CURRENT.uname()[0].lower()
        here = {"linux": {"unix", "linux"}, "darwin": {"mac", "unix"}, "windows": {"windows"}}.get(system, set())
        wanted = name or family
        negated = wanted.startswith("!")
        matches = (wanted.lstrip("!") == system) if name else (wanted.lstrip("!") in here)
        return Profile(profile.id, f"on OS {os_element.value('name') or os_element.value('family')}", matches != negated)
    prop = activation.child("property")
    if prop is not None:
        name, value = prop.value("name") or "", prop.value("value")
        if name.startswith("!"):
            return Profile(profile.id, f"unless -D{name[1:]} is given", True)
        return Profile(profile.id, f"with -D{name}" + (f"={value}" if value else ""), False)
    jdk = activation.value("jdk")
    if jdk:
        return Profile(profile.id, f"on JDK {jdk}", False)
    file_element = activation.child("file")
    if file_element is not None:
        present, missing = file_element.value("exists"), file_element.value("missing")
        target = present or missing or ""
        there = exists(os.path.join(basedir, target.replace("${basedir}", basedir).replace("${project.basedir}", basedir)))
        return Profile(profile.id, f"when {target} {'exists' if present else 'is missing'}",
                       there if present else not there)
    return Profile(profile.id, f"only with -P {profile.id}", False)


# --- properties --------------------------------------------------------------------------------

class Properties:
    """A pom's properties with Maven's `${...}` expansion, bounded; what cannot be expanded is recorded."""

    def __init__(self, values: dict[str, str], path: str, problems: Problems,
                 origins: dict[str, str] | None = None, env: dict[str, str] | None = None) -> None:
        self.values = values
        self.env = env or {}
        self.path = path
        self.origins = origins or {}  # property -> the pom that sets it
        self.problems = problems
        self.done: dict[str, str] = {}
        self.expanded: dict[str, str] = {}
        self.failed: set[str] = set()
        self.steps = 0

    def expand(self, text: str | None) -> str | None:
        if text is None or "${" not in text:
            return text
        if text not in self.expanded:
            try:
                self.expanded[text] = self._expand(text, ())
            except _Unbounded:  # already recorded against the property it started from
                self.expanded[text] = text
        return self.expanded[text]

    def _expand(self, text: str, chain: tuple[str, ...]) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1).strip()
            value = self._resolve(name, chain)
            return match.group(0) if value is None else value

        result = PROPERTY.sub(one, text)
        if len(result) > MAX_PROPERTY_LENGTH:
            raise _Unbounded(f"expands to more than {MAX_PROPERTY_LENGTH} characters (it grows without end)")
        return result

    def _resolve(self, name: str, chain: tuple[str, ...]) -> str | None:
        if name in self.done:
            return self.done[name]
        if name in self.failed:
            return None
        raw = self.values.get(name)
        if raw is None and name.startswith("env."):  # Maven reads ${env.X} from the environment
            raw = self.env.get(name[4:])
        if raw is None:
            return None
        if name in chain:
            cycle = " -> ".join(f"${{{n}}}" for n in (*chain[chain.index(name):], name))
            self._fail(name, f"refers to itself ({cycle})")
            return None
        if len(chain) >= MAX_PROPERTY_DEPTH:  # a chain that deep is cut where it starts, not deep inside
            raise _Unbounded(f"refers through more than {MAX_PROPERTY_DEPTH} other properties "
                             f"(${{{chain[0]}}} -> ${{{chain[1]}}} -> ... -> ${{{name}}}), so it was left unexpanded",
                             "limit")
        self.steps += 1
        if self.steps > MAX_PROPERTY_STEPS:
            self._fail(name, f"needs more than {MAX_PROPERTY_STEPS} expansions")
            return None
        try:
            value = self._expand(raw, (*chain, name)) if "${" in raw else raw
        except _Unbounded as error:
            if not chain:
                self._fail(name, str(error), error.kind)
                return None
            raise
        self.done[name] = value
        return value

    def _fail(self, name: str, why: str, kind: str = "property") -> None:
        if name not in self.failed:
            self.failed.add(name)
            self.problems.add(ProjectProblem(self.origins.get(name, self.path), f"the property ${{{name}}} {why}", kind))


class _Unbounded(Exception):
    def __init__(self, why: str, kind: str = "property") -> None:
        super().__init__(why)
        self.kind = kind  # "property": Maven fails on it too; "limit": the doctor's bound


# --- the effective model and the reactor -------------------------------------------------------

@dataclass
class _Effective:
    pom: Pom
    chain: list[Pom]  # the pom, then its parents
    properties: Properties
    dependencies: list[RawDependency]
    management: dict[tuple[str, str, str, str], RawDependency]
    profile_dependencies: list[tuple[Profile, RawDependency]]
    coordinates: tuple[str, str]
    profile_properties: list[tuple[Profile, dict[str, str]]] = field(default_factory=list)  # inactive ones
    managed_by_key: dict[tuple[str, str, str, str], RawDependency] | None = None  # expanded coordinates


class MavenReader:
    def __init__(self, root: str, env: dict[str, str]) -> None:
        self.root = root
        self.env = env
        self.problems = Problems()
        self.poms: dict[str, Pom | None] = {}
        self.effective_models: dict[str, _Effective] = {}

    def pom(self, path: str) -> Pom | None:
        real = os.path.realpath(path)
        if real not in self.poms:
            try:
                self.poms[real] = read_pom(path)
            except RefusedXml as error:
                self.poms[real] = None
                self.problems.add(ProjectProblem(path, f"refused: {error}", "refused"))
            except UnreadableFile as error:
                self.poms[real] = None
                self.problems.add(ProjectProblem(path, str(error)))
        return self.poms[real]

    def parent_of(self, pom: Pom) -> Pom | None:
        if pom.parent is None:
            return None
        group, artifact, version, relative = pom.parent
        local = None
        if relative != "":  # an empty <relativePath/> means: from the repository only
            local = os.path.join(os.path.dirname(pom.path), relative or "../pom.xml")
            local = os.path.join(local, "pom.xml") if os.path.isdir(local) else local
        home = self.env.get("HOME", "")
        repository = (os.path.join(home, ".m2", "repository", *group.split("."), artifact, version or "",
                                   f"{artifact}-{version}.pom") if home and version and group and artifact else None)
        for candidate in (local, repository):
            if candidate is None or not is_regular_file(candidate):
                continue
            parent = self.pom(candidate)
            if parent is None:
                continue
            parent_group = parent.group or _parent_group(parent)
            parent_version = parent.version or (parent.parent[2] if parent.parent else None)
            if parent.artifact == artifact and parent_group in (group, None) and version in (parent_version, None):
                return parent
            if candidate == local:
                problem = ProjectProblem(pom.path, (
                    f"its parent {group}:{artifact}:{version} is not the pom at {local} ({parent_group}:"
                    f"{parent.artifact}:{parent_version}), so Maven takes it from the repository, and what it "
                    "inherits (properties, dependencies) is unknown here"), "parent")
                self.problems.add(problem)
        return None

    def effective(self, pom: Pom) -> _Effective:
        if pom.path not in self.effective_models:
            self.effective_models[pom.path] = self._effective(pom)
        return self.effective_models[pom.path]

    def _effective(self, pom: Pom) -> _Effective:
        chain = [pom]
        while True:
            parent = self.parent_of(chain[-1])
            if parent is None or any(parent is p for p in chain):
                break
            if len(chain) > MAX_PARENTS:
                self.problems.add(ProjectProblem(pom.path, f"its parents go more than {MAX_PARENTS} poms deep; the "
                                                           f"doctor read the nearest {MAX_PARENTS}", "limit"))
                break
            chain.append(parent)
        values: dict[str, str] = {}
        origins: dict[str, str] = {}
        management: dict[tuple[str, str, str, str], RawDependency] = {}
        dependencies: dict[tuple[str, str, str, str], RawDependency] = {}
        profile_dependencies: list[tuple[Profile, RawDependency]] = []
        profile_properties: list[tuple[Profile, dict[str, str]]] = []
        for ancestor in reversed(chain):  # the farthest parent first, so that children override
            basedir = os.path.dirname(ancestor.path)
            values.update(ancestor.properties)
            origins.update(dict.fromkeys(ancestor.properties, ancestor.path))
            for managed in ancestor.management:
                management[_key(managed)] = managed
            for dependency in ancestor.dependencies:
                dependencies[_key(dependency)] = dependency
            for raw in ancestor.profiles:
                profile = describe_profile(raw, basedir, self.env)
                if profile.active:
                    values.update(raw.properties)
                    origins.update(dict.fromkeys(raw.properties, ancestor.path))
                    for managed in raw.management:
                        management[_key(managed)] = managed
                    for dependency in raw.dependencies:
                        dependencies[_key(dependency)] = dependency
                else:
                    profile_dependencies += [(profile, dependency) for dependency in raw.dependencies]
                    if raw.properties:
                        profile_properties.append((profile, raw.properties))
        version = pom.version or (pom.parent[2] if pom.parent else None)
        group = pom.group or (pom.parent[0] if pom.parent else None)
        builtins = {"project.version": version, "pom.version": version, "version": version,
                    "project.groupId": group, "project.artifactId": pom.artifact,
                    "project.parent.version": pom.parent[2] if pom.parent else None,
                    "project.parent.groupId": pom.parent[0] if pom.parent else None,
                    "project.basedir": os.path.dirname(pom.path), "basedir": os.path.dirname(pom.path)}
        for name, value in builtins.items():
            if value is not None:
                values.setdefault(name, value)
        properties = Properties(values, pom.path, self.problems, origins, self.env)
        return _Effective(pom, chain, properties, list(dependencies.values()), management, profile_dependencies,
                          (properties.expand(group) or "", properties.expand(pom.artifact) or ""), profile_properties)

    def with_profile(self, effective: _Effective, raw: RawDependency) -> list[tuple[Profile, Dependency]]:
        """What RAW becomes when an inactive profile's properties apply (`-P gpu` setting nd4j.backend)."""
        fields = " ".join(filter(None, (raw.group, raw.artifact, raw.version, raw.classifier)))
        if "${" not in fields or not effective.profile_properties:
            return []
        plain = self.resolve(effective, raw)
        found = []
        for profile, overrides in effective.profile_properties:
            if not any(f"${{{name}}}" in fields for name in overrides):
                continue
            values = {**effective.properties.values, **overrides}
            scratch = Properties(values, effective.pom.path, Problems(), effective.properties.origins, self.env)
            changed = self.resolve(effective, raw, scratch)
            if changed != plain:
                found.append((profile, changed))
        return found

    def resolve(self, effective: _Effective, raw: RawDependency, properties: Properties | None = None) -> Dependency:
        expand = (properties or effective.properties).expand
        group, artifact = expand(raw.group) or "", expand(raw.artifact) or ""
        classifier = expand(raw.classifier)
        version, scope = raw.version, raw.scope
        if effective.managed_by_key is None:  # the managed entries' own coordinates may use properties too
            effective.managed_by_key = {}
            for key, candidate in effective.management.items():
                expanded = (effective.properties.expand(key[0]) or "", effective.properties.expand(key[1]) or "",
                            key[2], effective.properties.expand(key[3]) or "")
                effective.managed_by_key.setdefault(expanded, candidate)
        managed = effective.managed_by_key.get((group, artifact, raw.type, classifier or ""))
        if managed is not None:
            version = version or managed.version
            scope = scope or managed.scope
        return Dependency(group, artifact, expand(version), classifier, scope or "compile")


def _parent_group(pom: Pom) -> str | None:
    return pom.parent[0] if pom.parent else None


def _key(dependency: RawDependency) -> tuple[str, str, str, str]:
    return (dependency.group, dependency.artifact, dependency.type, dependency.classifier or "")


def read_maven_project(root: str, env: dict[str, str]) -> BuildProject:
    """Every module of the Maven project at ROOT (its pom.xml), with the dependencies each really uses."""
    reader = MavenReader(root, env)
    project = BuildProject(root=root, tool="maven", problems=reader.problems)
    found: list[tuple[str, Pom, Profile | None]] = []
    seen: set[str] = set()
    pending: deque[tuple[str, Profile | None]] = deque([(os.path.join(root, "pom.xml"), None)])
    while pending:
        path, profile = pending.popleft()
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        if len(found) >= MAX_MODULES:
            reader.problems.add(ProjectProblem(os.path.join(root, "pom.xml"), f"its reactor has more than {MAX_MODULES} "
                                               f"modules; the doctor read the first {MAX_MODULES}", "limit"))
            break
        pom = reader.pom(path)
        if pom is None:
            continue
        found.append((path, pom, profile))
        basedir = os.path.dirname(path)
        properties = reader.effective(pom).properties
        listed = [(module, profile) for module in pom.modules]
        for raw in pom.profiles:
            listed += [(module, profile or describe_profile(raw, basedir, env)) for module in raw.modules]
        for module, in_profile in listed:
            module_pom = _module_pom(basedir, properties.expand(module) or module, reader, pom.path)
            if module_pom is not None:
                pending.append((module_pom, in_profile))
    effective = {path: reader.effective(pom) for path, pom, _ in found}
    by_coordinates = {e.coordinates: path for path, e in effective.items()}
    direct = {path: [reader.resolve(e, raw) for raw in e.dependencies] for path, e in effective.items()}
    memo: dict[str, list[Dependency]] = {}
    for path, pom, profile in found:
        e = effective[path]
        dependencies = list(direct[path]) + _through_modules(path, direct, by_coordinates, memo)
        name = os.path.relpath(os.path.dirname(path), root)
        source = e.properties.expand(pom.source_directory) if pom.source_directory else None
        sources = [os.path.join(os.path.dirname(path), source)] if source else [
            os.path.join(os.path.dirname(path), "src", "main", "java"),
            os.path.join(os.path.dirname(path), "src", "main", "kotlin")]
        project.modules.append(BuildModule(
            name=name, build_file=path, tool="maven", dependencies=tuple(dependencies), profile=profile,
            profile_dependencies=tuple([(p, reader.resolve(e, raw)) for p, raw in e.profile_dependencies]
                                       + [pair for raw in e.dependencies for pair in reader.with_profile(e, raw)]),
            source_dirs=tuple(sources), packaging=pom.packaging))
    return project


def _module_pom(basedir: str, module: str, reader: MavenReader, declared_in: str) -> str | None:
    path = os.path.normpath(os.path.join(basedir, module))
    if os.path.isdir(path):
        path = os.path.join(path, "pom.xml")
    if not os.path.lexists(path):
        reader.problems.add(ProjectProblem(declared_in, f"it lists the module {module!r}, but {path} does not exist",
                                           "missing-module"))
        return None
    return path


def _through_modules(path: str, direct: dict[str, list[Dependency]], by_coordinates: dict[tuple[str, str], str],
                     memo: dict[str, list[Dependency]] | None = None, visiting: set[str] | None = None,
                     ) -> list[Dependency]:
    """Dependencies that reach PATH's module through other modules of the same reactor (transitive scopes
    only), each once; memoized, so a long chain of modules costs its length, not its square."""
    memo = {} if memo is None else memo
    visiting = set() if visiting is None else visiting
    if path in memo:
        return memo[path]
    visiting.add(path)
    found: dict[tuple[str, str, str], Dependency] = {}
    for dependency in direct[path]:
        target = by_coordinates.get((dependency.group, dependency.artifact))
        if target is None or target in visiting or dependency.scope in NON_TRANSITIVE:
            continue
        for inherited in direct[target] + _through_modules(target, direct, by_coordinates, memo, visiting):
            key = (inherited.group, inherited.artifact, inherited.classifier or "")
            if inherited.scope not in NON_TRANSITIVE and key not in found:
                found[key] = Dependency(inherited.group, inherited.artifact, inherited.version, inherited.classifier,
                                        inherited.scope, via=inherited.via or dependency.artifact)
    visiting.discard(path)
    memo[path] = list(found.values())
    return memo[path]
