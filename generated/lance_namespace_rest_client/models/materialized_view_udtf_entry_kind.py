from enum import StrEnum


class MaterializedViewUdtfEntryKind(StrEnum):
    CHUNKER = "chunker"
    UDTF = "udtf"

    def __str__(self) -> str:
        return str(self.value)
