from llm.offline.engine import OfflineEngine

__all__ = ["OfflineEngine"]
