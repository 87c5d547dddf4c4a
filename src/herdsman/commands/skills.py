"""``herdsman skills``: list, show, validate, create, enable, disable, install and export skills,
set the secrets they declare, and review the skills proposed from runs (``proposals``).

A typer sub-app mounted by :mod:`herdsman.cli`; it reads only the config and the skills folder,
so it starts fast and never builds an agent.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal, Optional

import typer
from rich.console import Console
from rich.table import Table

from herdsman.commands.options import ConfigOpt, load_or_exit
from herdsman.commands.skill_proposals import proposals_app
from herdsman.config.schema import HerdsmanConfig
from herdsman.skills.archive import ARCHIVE_SUFFIX, PackageError
from herdsman.skills.catalog import SkillCatalog, load_skills, resolve_skills_root
from herdsman.skills.install import export_skill, install_skill
from herdsman.skills.model import SKILL_FILE, Skill, SkillError
from herdsman.skills.parse import parse_skill_file
from herdsman.skills.scaffold import new_skill
from herdsman.skills.secrets import SecretError, SkillSecrets, declared
from herdsman.skills.switches import SkillSwitches, disabled_skills
from herdsman.terminal_text import escape

skills_app = typer.Typer(
    help="List, show, validate, create, enable, disable, install and export skills; set their secrets.",
    no_args_is_help=True,
)
console = Console()
err = Console(stderr=True)


def _config(path: Path | None) -> HerdsmanConfig:
    return load_or_exit(path).config


def _catalog(config: HerdsmanConfig) -> SkillCatalog:
    root = resolve_skills_root(config, when_disabled=True)
    if root is None or not root.is_dir():
        err.print(
            f"[yellow]No skills folder at {escape(str(root))}.[/yellow] Set skills.path in config.yaml, "
            "or create one with: herdsman skills new <name>"
        )
    return load_skills(root, disabled_skills(config))


def _status(catalog: SkillCatalog, name: str, source: str) -> str:
    skill = catalog.skills.get(name)
    if skill is not None and skill.source == source:
        return "enabled"
    if any(s.name == name and s.source == source for s in catalog.overridden):
        return "overridden by custom"
    if any(s.name == name for s in catalog.disabled):
        return "disabled"
    if name in catalog.unavailable:
        return "missing secrets: " + ", ".join(catalog.unavailable[name])
    return "?"


@skills_app.command("list")
def skills_list(config: ConfigOpt = None) -> None:
    """List every skill with its source and status; broken SKILL.md files are listed after."""
    cfg = _config(config)
    catalog = _catalog(cfg)
    if not cfg.skills.enabled:
        console.print("[yellow]Skills are off (skills.enabled: false); the agent sees none of these.[/yellow]")
    if catalog.all_skills:
        table = Table("name", "source", "status", "description")
        for skill in sorted(catalog.all_skills, key=lambda s: (s.name, s.source)):
            table.add_row(
                skill.name, skill.source, _status(catalog, skill.name, skill.source), escape(skill.description)
            )
        console.print(table)
    else:
        console.print("No skills yet. Create one with: herdsman skills new <name>")
    for problem in catalog.problems:
        err.print(f"[red]invalid:[/red] {escape(str(problem))}")


@skills_app.command("show")
def skills_show(name: str, config: ConfigOpt = None) -> None:
    """Print one skill: where it is, its fields and its instructions."""
    catalog = _catalog(_config(config))
    skill = catalog.skills.get(name) or next((s for s in reversed(catalog.all_skills) if s.name == name), None)
    if skill is None:
        names = ", ".join(sorted({s.name for s in catalog.all_skills})) or "none"
        err.print(f"[red]Error:[/red] no skill named {escape(name)!r}; the skills are: {escape(names)}")
        raise typer.Exit(1)
    console.print(f"[bold]{escape(skill.name)}[/bold] ({skill.source}) {escape(str(skill.file))}")
    console.print(f"  in the sandbox: {skill.virtual_path}")
    console.print(f"  description: {escape(skill.description)}")
    if skill.license:
        console.print(f"  license: {escape(skill.license)}")
    tools = "all" if skill.allowed_tools is None else (", ".join(skill.allowed_tools) or "none")
    console.print(f"  allowed-tools: {escape(tools)}")
    if skill.env:
        console.print(f"  env: {escape(', '.join(skill.env))}")
    if skill.required_secrets:
        console.print(f"  required-secrets: {escape(', '.join(skill.required_secrets))}")
    console.print()
    console.print(escape(skill.body), highlight=False)


@skills_app.command("validate")
def skills_validate(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="Skill folders or SKILL.md files; default all.")] = None,
    config: ConfigOpt = None,
) -> None:
    """Check SKILL.md files; print each problem with its file and field. Exit 1 on any problem."""
    problems: list[SkillError] = []
    checked = 0
    if paths:
        for path in paths:
            directory = path.parent if path.name == SKILL_FILE else path
            source: Literal["public", "custom"] = "public" if directory.parent.name == "public" else "custom"
            try:
                parse_skill_file(directory, source, shown=str(directory / SKILL_FILE))
                checked += 1
            except SkillError as exc:
                problems.append(exc)
    else:
        catalog = _catalog(_config(config))
        checked, problems = len(catalog.all_skills), list(catalog.problems)
        for skill in catalog.overridden:
            console.print(f"note: custom skill {skill.name!r} overrides the public one")
    for problem in problems:
        err.print(f"[red]invalid:[/red] {escape(str(problem))}")
    if problems:
        raise typer.Exit(1)
    console.print(f"[green]OK[/green] {checked} skill(s) valid")


@skills_app.command("new")
def skills_new(
    name: str,
    description: Annotated[
        str, typer.Option("--description", "-d", help="What the skill does and when to use it.")
    ] = "",
    config: ConfigOpt = None,
) -> None:
    """Create skills/custom/NAME/SKILL.md from a template, ready to edit."""
    root = resolve_skills_root(_config(config), when_disabled=True)
    assert root is not None
    try:
        skill = new_skill(root, name, description)
    except SkillError as exc:
        err.print(f"[red]Error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from None
    console.print(f"[green]created[/green] {escape(str(skill.file))}; edit it, then run: herdsman skills validate")


def _switch(name: str, enabled: bool, config_path: Path | None) -> None:
    cfg = _config(config_path)
    catalog = _catalog(cfg)
    names = sorted({s.name for s in catalog.all_skills})
    if name not in names:
        err.print(
            f"[red]Error:[/red] no skill named {escape(name)!r}; the skills are: {escape(', '.join(names) or 'none')}"
        )
        raise typer.Exit(1)
    SkillSwitches.of(cfg).set(name, enabled)
    state = "enabled" if enabled else "disabled"
    console.print(
        f"[green]{state}[/green] {escape(name)} (for the CLI and the gateway; a running gateway picks it up "
        "when switched through its API, or at restart)"
    )


@skills_app.command("enable")
def skills_enable(name: str, config: ConfigOpt = None) -> None:
    """Switch a skill on (wins over skills.disabled in config.yaml)."""
    _switch(name, True, config)


@skills_app.command("disable")
def skills_disable(name: str, config: ConfigOpt = None) -> None:
    """Switch a skill off: the agent no longer sees it."""
    _switch(name, False, config)


UserOpt = Annotated[
    Optional[str],
    typer.Option("--user", "-u", help="One user's own skills (their gateway user id); default: shared by everyone."),
]


def _named_skill(config: HerdsmanConfig, name: str, user: str | None) -> Skill:
    """The skill ``name`` as ``user`` sees it (their own first, then custom, then public); exits 1 if none."""
    root = resolve_skills_root(config, when_disabled=True)
    catalog = load_skills(root, user=user)
    found = [s for s in catalog.all_skills if s.name == name]
    if not found:
        names = ", ".join(sorted({s.name for s in catalog.all_skills})) or "none"
        err.print(f"[red]Error:[/red] no skill named {escape(name)!r}; the skills are: {escape(names)}")
        raise typer.Exit(1)
    return found[-1]


@skills_app.command("install")
def skills_install(
    source: Annotated[
        str, typer.Argument(help="A .skill archive, a skill folder, or a Git URL (https://, file://, ...).")
    ],
    replace: Annotated[bool, typer.Option("--replace", help="Replace a skill of the same name.")] = False,
    user: UserOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Install a skill: checked completely (front matter, scripts, sizes, links, paths) before anything is written."""
    root = resolve_skills_root(_config(config), when_disabled=True)
    assert root is not None
    try:
        done = install_skill(source, root, user=user, replace=replace)
    except (PackageError, SkillError) as exc:
        err.print(f"[red]Refused:[/red] {escape(str(exc))}; nothing was installed")
        raise typer.Exit(1) from None
    verb = "replaced" if done.replaced else "installed"
    who = f"for user {user}" if user else "for everyone"
    console.print(
        f"[green]{verb}[/green] {escape(done.skill.name)} {who} ({done.files} files) "
        f"in {escape(str(done.skill.directory))}"
    )
    if done.skill.env or done.skill.required_secrets:
        names = ", ".join(declared(done.skill))
        console.print(
            f"It reads secrets ({escape(names)}); set each with: herdsman skills secret set {done.skill.name} VAR"
        )


@skills_app.command("export")
def skills_export(
    name: str,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="The archive to write; default ./NAME.skill.")
    ] = None,
    user: UserOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Write a skill's folder as a .skill archive (a zip) that `herdsman skills install` takes back."""
    skill = _named_skill(_config(config), name, user)
    target = output or Path.cwd() / f"{skill.name}{ARCHIVE_SUFFIX}"
    try:
        count = export_skill(skill, target)
    except (PackageError, OSError) as exc:
        err.print(f"[red]Error:[/red] cannot export {escape(name)!r}: {escape(str(exc))}")
        raise typer.Exit(1) from None
    console.print(f"[green]exported[/green] {escape(skill.name)} ({count} files) to {escape(str(target))}")


secret_app = typer.Typer(
    help="Secrets a skill declares (env: in SKILL.md), kept per user outside every thread.", no_args_is_help=True
)
skills_app.add_typer(secret_app, name="secret")
skills_app.add_typer(proposals_app, name="proposals")


@secret_app.command("set")
def secret_set(
    name: Annotated[str, typer.Argument(help="The skill.")],
    variable: Annotated[str, typer.Argument(help="One of the variables the skill declares.")],
    user: UserOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Set a secret; the value is read from stdin, or asked for (hidden) on a terminal."""
    cfg = _config(config)
    skill = _named_skill(cfg, name, user)
    if sys.stdin.isatty():
        value = typer.prompt(f"{variable} for {name}", hide_input=True)
    else:
        value = sys.stdin.read().rstrip("\r\n")
    try:
        SkillSecrets.of(cfg).set(user, skill, variable, value)
    except SecretError as exc:
        err.print(f"[red]Error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from None
    console.print(
        f"[green]set[/green] {escape(variable)} for {escape(name)}; its commands get it as an environment variable"
    )


@secret_app.command("unset")
def secret_unset(name: str, variable: str, user: UserOpt = None, config: ConfigOpt = None) -> None:
    """Forget a secret."""
    if not SkillSecrets.of(_config(config)).unset(user, name, variable):
        err.print(f"[red]Error:[/red] {escape(variable)} is not set for {escape(name)}")
        raise typer.Exit(1)
    console.print(f"[green]unset[/green] {escape(variable)} for {escape(name)}")


@secret_app.command("list")
def secret_list(user: UserOpt = None, config: ConfigOpt = None) -> None:
    """The secrets set, by skill: names only, never values."""
    names = SkillSecrets.of(_config(config)).names(user)
    if not names:
        console.print("No skill secrets set. Set one with: herdsman skills secret set SKILL VAR")
    for skill, variables in names.items():
        console.print(f"{escape(skill)}: {escape(', '.join(variables))}")
