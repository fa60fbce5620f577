"""gcengine: context garbage collection for LLM agent sessions, as a pure library.

Values in, values out: no web framework, no database, no network. The only I/O is the explicit
load/save helpers, which read files only when handed a path.
"""

from gcengine._fast import cyclic_gc_paused
from gcengine.budget import (
    DEFAULT_CONTEXT_LIMIT,
    GC_POLICY_INDICATORS,
    POLICY_ORDER,
    GCPolicy,
    InstructionBudget,
    InstructionSource,
    SourceEntry,
    most_protective,
)
from gcengine.config import GCConfig, dump_gc_config, load_gc_config
from gcengine.errors import ConfigError, GCEngineError, SessionFormatError
from gcengine.formats import LoadLimits, dump_session, load_session
from gcengine.gc import GCOutcome, GCResult, GCTriggerReason, Simulation, run_gc, simulate
from gcengine.messages import (
    FunctionCall,
    FunctionResponse,
    InlineData,
    Message,
    MessageKind,
    OpaquePart,
    Part,
    PartType,
    Role,
    Turn,
    split_into_turns,
)
from gcengine.session import (
    ContextLimitOrigin,
    Session,
    SourceFormat,
    SystemInstruction,
    TokenDrift,
    build_budget,
    rebuild_budget,
    token_drift,
)
from gcengine.tokens import (
    ApproxCounter,
    TokenCounter,
    count_message,
    load_counter,
)

__all__ = [
    "DEFAULT_CONTEXT_LIMIT",
    "GC_POLICY_INDICATORS",
    "POLICY_ORDER",
    "ApproxCounter",
    "ConfigError",
    "ContextLimitOrigin",
    "FunctionCall",
    "FunctionResponse",
    "GCConfig",
    "GCEngineError",
    "GCOutcome",
    "GCPolicy",
    "GCResult",
    "GCTriggerReason",
    "InlineData",
    "InstructionBudget",
    "InstructionSource",
    "LoadLimits",
    "Message",
    "MessageKind",
    "OpaquePart",
    "Part",
    "PartType",
    "Role",
    "Session",
    "SessionFormatError",
    "Simulation",
    "SourceEntry",
    "SourceFormat",
    "SystemInstruction",
    "TokenCounter",
    "TokenDrift",
    "Turn",
    "build_budget",
    "count_message",
    "cyclic_gc_paused",
    "dump_gc_config",
    "dump_session",
    "load_counter",
    "load_gc_config",
    "load_session",
    "most_protective",
    "rebuild_budget",
    "run_gc",
    "simulate",
    "split_into_turns",
    "token_drift",
]
