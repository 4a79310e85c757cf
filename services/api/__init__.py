"""The engine's transport-neutral request/response model and its JSON codec.

Every face of the engine (in-process KnowledgeService, the child-process EngineProcess, HTTP,
MCP) speaks the dataclasses of services.models plus the request types in services.api.messages;
services.api.codec turns them into JSON and back (pydantic TypeAdapter), for server and client.
"""
