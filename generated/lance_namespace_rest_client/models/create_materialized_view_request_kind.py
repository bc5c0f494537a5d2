from enum import StrEnum


class CreateMaterializedViewRequestKind(StrEnum):
    CHUNKER = "chunker"
    QUERY = "query"
    UDTF = "udtf"

    def __str__(self) -> str:
        return str(self.value)
